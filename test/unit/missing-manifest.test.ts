import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { noManifestMessage, shellWord } from '../../src/read/missing-manifest.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

/** The message openDataset and verifyDataset both give for `location`, checked to be the same. */
async function why(location: string): Promise<string> {
  const opened = await openDataset(location).then(
    () => 'opened',
    (err: { code: string; message: string }) => `${err.code}: ${err.message}`,
  );
  const verified = await verifyDataset(location).then(
    () => 'verified',
    (err: { code: string; message: string }) => `${err.code}: ${err.message}`,
  );
  expect(verified).toBe(opened);
  expect(opened.startsWith(`${ErrorCodes.NOT_A_DATASET}: `)).toBe(true);
  return opened.slice(ErrorCodes.NOT_A_DATASET.length + 2);
}

describe('a location without a manifest is told apart', () => {
  const root = tmpDir();
  const at = (name: string): string => path.join(root, name);

  it('a missing path, a file, the manifest itself, a tar file', async () => {
    expect(await why(at('nowhere'))).toBe(`${at('nowhere')}: no such directory`);
    fs.writeFileSync(at('notes.txt'), 'x');
    expect(await why(at('notes.txt'))).toBe(`${at('notes.txt')} is a file, not a dataset directory (the directory that holds manifest.json)`);
    fs.writeFileSync(at('a.tar'), 'x');
    expect(await why(at('a.tar'))).toBe(`${at('a.tar')} is a tar file, not a dataset directory: make a dataset of tar shards with \`shardkit index ${at('a.tar')} --out DIR\``);
    const ds = at('ds');
    const w = new DatasetWriter({ dir: ds });
    w.add({ key: 'k', members: { txt: new Uint8Array([1]) } });
    await w.finish();
    expect(await why(path.join(ds, 'manifest.json'))).toBe(`${path.join(ds, 'manifest.json')} is the manifest file: pass the dataset directory that holds it (${ds})`);
  });

  it('a source folder: pack it first, never reindex or --resume; an empty folder; a folder of datasets', async () => {
    const src = at('photos');
    fs.mkdirSync(path.join(src, 'cats'), { recursive: true });
    fs.writeFileSync(path.join(src, 'cats', 'a.jpg'), 'x');
    const message = await why(src);
    expect(message).toBe(`${src} is a source folder, not a dataset (no manifest.json): pack it first with \`shardkit pack ${src}\``);
    expect(message).not.toMatch(/reindex|--resume/);
    fs.mkdirSync(at('empty'));
    expect(await why(at('empty'))).toBe(`${at('empty')} is an empty directory, not a dataset`);
    const parent = at('datasets');
    for (const name of ['train', 'val']) {
      const w = new DatasetWriter({ dir: path.join(parent, name) });
      w.add({ key: 'k', members: { txt: new Uint8Array([1]) } });
      await w.finish();
    }
    expect(await why(parent)).toBe(`${parent} is not a dataset but holds 2: pass one of them (${path.join(parent, 'train')}, ${path.join(parent, 'val')})`);
  });

  it('shards without a manifest: reindex; an interrupted write: --resume (only there)', async () => {
    const dir = at('interrupted');
    const w = new DatasetWriter({ dir, shardBytes: 4096 });
    for (let i = 0; i < 20; i++) w.add({ key: `k${String(i).padStart(3, '0')}`, members: { bin: new Uint8Array(1500).fill(i) } });
    w.abort();
    expect(await why(dir)).toMatch(
      new RegExp(`^${dir} is not a shardkit dataset \\(no manifest\\.json; an interrupted pack left \\d+ samples in \\d+ finished shards: finish it with \`shardkit pack <src> --out ${dir} --resume\` \\(same source and options;`),
    );
    fs.rmSync(path.join(dir, '.shardkit-work'), { recursive: true });
    const shards = fs.readdirSync(dir).filter((n) => n.endsWith('.tar')).length;
    expect(await why(dir)).toBe(`${dir} is not a shardkit dataset (no manifest.json, but ${shards} shard files): if they are intact tar shards, \`shardkit reindex ${dir}\` rebuilds the index and manifest`);
  });

  it('a write that failed on an input says so, and what can succeed', async () => {
    const dir = at('failed');
    const w = new DatasetWriter({ dir, shardBytes: 4096 });
    for (let i = 0; i < 10; i++) w.add({ key: `k${i}`, members: { bin: new Uint8Array(1500) } });
    const { ShardkitError } = await import('../../formats/errors.js');
    w.abort(new ShardkitError(ErrorCodes.INPUT, 'Cannot decode image member jpg of sample z in pass resize', { file: 'z.jpg' }));
    const message = await why(dir);
    expect(message).toContain('a pack failed after');
    expect(message).toContain(`(SHARDKIT_ERR_INPUT: Cannot decode image member jpg of sample z in pass resize): fix or remove z.jpg and finish with \`shardkit pack <src> --out ${dir} --resume\`, or add \`--on-error skip\` to leave such inputs out; \`--force\` starts over`);
    expect(message).not.toContain('interrupted');
  });

  it('a URL: no local guesses', () => {
    expect(noManifestMessage('https://example.com/ds?sig=secret')).toMatch(/^https:\/\/example\.com\/ds.* is not a shardkit dataset \(no manifest\.json there\): check that the URL is the dataset's directory$/);
    expect(noManifestMessage('https://example.com/ds?sig=secret')).not.toContain('secret');
  });

  it('quotes paths for the shell only when needed', () => {
    expect(shellWord('/data/my-set_1.0')).toBe('/data/my-set_1.0');
    expect(shellWord("/data/Bob's photos")).toBe(`'/data/Bob'\\''s photos'`);
  });
});
