/**
 * Issue 26, "also noted": a backslash in a member extension was packed and verified, then made extract refuse the
 * whole dataset; a loader over http printed MaxListenersExceededWarning.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { HttpClient } from '../../src/io/http-client.js';
import { HttpSource } from '../../src/io/http-source.js';
import { pack } from '../../src/pack/pack.js';
import { extractDataset } from '../../src/verify/extract.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { crc32c } from '../../formats/checksum.js';
import { Codec } from '../../formats/index-entry.js';
import { encodeFileHeader, tarPadding } from '../../formats/tar-header.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { httpFiles } from '../helpers/http-files.js';
import { run } from '../helpers/tools.js';
import { tmpDir } from '../helpers/tmp.js';

const files = httpFiles();

describe('issue 26, also noted', () => {
  it('backslash_in_an_extension: pack refuses it (UNSAFE_PATH, skippable), so extract takes the dataset', async () => {
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.x\\y'), 'odd');
    fs.writeFileSync(path.join(src, 'b.txt'), 'fine');
    const err = (await pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0 }).catch((e: unknown) => e)) as { code: string; message: string };
    expect(err.code).toBe(ErrorCodes.UNSAFE_PATH);
    expect(err.message).toContain('backslash');
    const r = await pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0, onError: 'skip' });
    expect(r.manifest.skipped.map((s) => s.path)).toEqual(['a.x\\y']);
    const target = path.join(tmpDir(), 'x');
    await extractDataset(r.out, target);
    expect(fs.readdirSync(target)).toEqual(['b.txt']);
  });

  for (const layout of ['tar', 'packed'] as const) {
    it(`backslash_in_an_extension_of_an_existing_dataset (${layout}): extract writes it as one file name, verify and GNU tar agree`, async () => {
      // as an earlier shardkit wrote it (pack and DatasetWriter.add refuse such names now): encoded by hand
      const dir = path.join(tmpDir(), 'ds');
      const w = new DatasetWriter({ dir, layout });
      const add = (key: string, ext: string, text: string): void => {
        const data = Buffer.from(text);
        const name = `${key}.${ext}`;
        const header = layout === 'tar' ? encodeFileHeader(name, data.length) : new Uint8Array(0);
        const pad = layout === 'tar' ? new Uint8Array(tarPadding(data.length)) : new Uint8Array(0);
        const members = [{ ext, offset: 0, size: data.length, storedSize: data.length, codec: Codec.none, crc32c: crc32c(data) }];
        w.addEncoded(key, { parts: [header, data, pad], bytes: header.length + data.length + pad.length, spanStart: header.length, members, originalBytes: data.length });
      };
      add('a', 'x\\..\\..\\y', 'odd');
      add('b', 'txt', 'fine');
      await w.finish();
      const v = await verifyDataset(dir);
      expect(v.damaged).toEqual([]);
      expect(v.ok).toBe(true);
      const target = path.join(tmpDir(), 'x');
      const r = await extractDataset(dir, target);
      expect(r.files).toBe(2);
      expect(fs.readdirSync(target).sort()).toEqual(['a.x\\..\\..\\y', 'b.txt']);
      expect(fs.readFileSync(path.join(target, 'a.x\\..\\..\\y'), 'utf8')).toBe('odd');
      if (layout === 'tar') {
        const byTar = tmpDir();
        run('tar', ['-xf', path.join(dir, 'shard-000000.tar'), '-C', byTar]);
        expect(fs.readdirSync(byTar).sort()).toEqual(['a.x\\..\\..\\y', 'b.txt']);
      }
    });
  }

  it('paths_over_4096_bytes_with_on_error_skip: the deep directory is skipped and listed, the rest packed', async () => {
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.txt'), 'shallow');
    // 18 directories of 250 bytes: past PATH_MAX (4096), so made through directory descriptors
    const deep = `import os\nfd = os.open(${JSON.stringify(src)}, os.O_RDONLY)\nfor _ in range(18):\n    os.mkdir('d' * 250, dir_fd=fd)\n    fd = os.open('d' * 250, os.O_RDONLY, dir_fd=fd)\nf = os.open('f.txt', os.O_WRONLY | os.O_CREAT, dir_fd=fd)\nos.write(f, b'deep')`;
    run('python3', ['-c', deep]);
    try {
      const err = (await pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0 }).catch((e: unknown) => e)) as { code: string };
      expect(err.code).toBe(ErrorCodes.INPUT);
      const r = await pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0, onError: 'skip' });
      expect(r.manifest.totals.samples).toBe(1);
      expect(r.manifest.skipped).toHaveLength(1);
      expect(r.manifest.skipped[0]!.reason).toMatch(/^SHARDKIT_ERR_TOO_LARGE: .*ENAMETOOLONG/);
    } finally {
      // Node's rm cannot remove what lies past PATH_MAX; Python's rmtree works through descriptors
      run('python3', ['-c', `import shutil\nshutil.rmtree(${JSON.stringify(path.join(src, 'd'.repeat(250)))})`]);
    }
  });

  it('many_concurrent_http_reads_on_one_client: no MaxListenersExceededWarning', async () => {
    const server = await startFlakyServer(files.root, [], { delayMs: 20 });
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    const client = new HttpClient({ maxSockets: 4 });
    try {
      const src = new HttpSource(`${server.url}/shard.bin`, { client });
      await Promise.all(Array.from({ length: 40 }, (_, i) => src.read(i * 100, 100)));
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      client.close();
      await server.stop();
    }
  });
});
