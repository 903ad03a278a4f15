/**
 * Issue 26, item 1 (family: a path a writer creates or replaces in its output is never, and never points to, an
 * input; no writer writes through a link). `index` once wrote its manifest through a hard link to the user's tar
 * named `manifest.json.tmp`.
 */
import fs from 'node:fs';
import path from 'node:path';
import tarStream from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { adoptTars } from '../../src/adopt/adopt-tars.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { createFresh, replaceFile } from '../../src/pack/replace-file.js';
import { openDataset } from '../../src/read/dataset.js';
import { errorOf } from '../helpers/error-of.js';
import { bufferChunk } from '../helpers/stream-chunks.js';
import { tmpDir } from '../helpers/tmp.js';

async function makeTar(file: string): Promise<Buffer> {
  const pack = tarStream.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c) => chunks.push(bufferChunk(c)));
  const done = new Promise<void>((resolve) => pack.on('end', resolve));
  pack.entry({ name: 's0.txt' }, Buffer.from('zero'));
  pack.entry({ name: 's1.txt' }, Buffer.from('one'));
  pack.finalize();
  await done;
  const bytes = Buffer.concat(chunks);
  fs.writeFileSync(file, bytes);
  return bytes;
}

async function readsBack(dir: string): Promise<void> {
  const ds = await openDataset(dir);
  expect(Buffer.from((await ds.get('s1')).members.txt!).toString()).toBe('one');
  await ds.close();
}

describe('index never writes through a link to a tar it indexes', () => {
  for (const name of ['manifest.json.tmp', 'index.skidx.tmp', '.shardkit-lock', 'manifest.json', 'index.skidx']) {
    for (const link of ['auto', 'symlink'] as const) {
      it(`index_tar_named_${name}_into_another_dir_link_${link}: the tar keeps its bytes`, async () => {
        const a = tmpDir();
        const tar = path.join(a, name);
        const bytes = await makeTar(tar);
        const out = path.join(tmpDir(), 'ds');
        const r = await adoptTars([tar], { out, link });
        expect(fs.readFileSync(tar)).toEqual(bytes);
        expect(r.shards[0]!.file).not.toBe(name);
        await readsBack(out);
      });
    }
  }

  for (const name of ['manifest.json.tmp', 'index.skidx.tmp']) {
    it(`index_tar_named_${name}_in_place: the tar keeps its bytes and its name`, async () => {
      const out = tmpDir();
      const tar = path.join(out, name);
      const bytes = await makeTar(tar);
      await adoptTars([tar], { out });
      expect(fs.readFileSync(tar)).toEqual(bytes);
      await readsBack(out);
      // and again with --force: the rerun neither refuses its own output nor touches the tar
      await adoptTars([tar], { out, force: true });
      expect(fs.readFileSync(tar)).toEqual(bytes);
    });
  }
});

describe('writers make their temporaries anew', () => {
  it('createFresh_replaces_a_planted_symlink_and_hard_link: their targets keep their bytes', () => {
    const dir = tmpDir();
    const victim = path.join(dir, 'victim');
    fs.writeFileSync(victim, 'precious');
    for (const plant of [(p: string) => fs.symlinkSync(victim, p), (p: string) => fs.linkSync(victim, p)]) {
      const tmp = path.join(dir, 'shard-000000.tar.tmp');
      plant(tmp);
      const fd = createFresh(tmp);
      fs.writeSync(fd, 'shard bytes');
      fs.closeSync(fd);
      expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
      expect(fs.lstatSync(tmp).isFile()).toBe(true);
      fs.rmSync(tmp);
    }
  });

  it('replaceFile_over_a_hard_link: the other name keeps the old bytes', () => {
    const dir = tmpDir();
    const victim = path.join(dir, 'victim');
    fs.writeFileSync(victim, 'precious');
    fs.linkSync(victim, path.join(dir, 'manifest.json'));
    replaceFile(path.join(dir, 'manifest.json'), Buffer.from('{}'));
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
    expect(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')).toBe('{}');
  });

  it('pack_with_a_symlink_planted_at_a_shard_temporary: the link target is untouched', async () => {
    const out = path.join(tmpDir(), 'ds');
    const victim = path.join(tmpDir(), 'victim');
    fs.writeFileSync(victim, 'precious');
    const w = new DatasetWriter({ dir: out });
    // a hostile local writer plants a link where the first shard's temporary goes
    fs.symlinkSync(victim, path.join(out, 'shard-000000.tar.tmp'));
    w.add({ key: 'k', members: { txt: Buffer.from('x') } });
    await w.finish();
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
    const ds = await openDataset(out);
    expect(Buffer.from((await ds.get('k')).members.txt!).toString()).toBe('x');
    await ds.close();
  });

  it('index_refuses_when_its_index_name_is_the_tar: UNSAFE_PATH or OUTPUT_EXISTS, the tar kept', async () => {
    const out = tmpDir();
    const tar = path.join(out, 'index.skidx');
    const bytes = await makeTar(tar);
    const err = (await errorOf(adoptTars([tar], { out }))) as { code: string };
    expect([ErrorCodes.UNSAFE_PATH, ErrorCodes.OUTPUT_EXISTS]).toContain(err.code);
    expect(fs.readFileSync(tar)).toEqual(bytes);
  });
});
