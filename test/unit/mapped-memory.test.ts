/** residentMappedBytes: the Rss of the mappings of files inside given directories, from a /proc/PID/smaps text. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownResidentMappedBytes, residentMappedBytes } from '../../src/bench/mapped-memory.js';
import { nativeAvailable } from '../../src/native/native.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { tmpDir } from '../helpers/tmp.js';

/** One smaps entry: a header line and the fields the parser must read past. */
const entry = (header: string, rssKb: number): string =>
  [header, 'Size:                 64 kB', 'KernelPageSize:        4 kB', `Rss:                  ${rssKb} kB`, `Pss:                  ${rssKb} kB`, 'Anonymous:             0 kB', 'VmFlags: rd mr mw me'].join('\n');

const SMAPS = [
  entry('5586b521e000-5586b5220000 r--p 00000000 fe:00 260386                     /usr/bin/node', 9000),
  entry('7f0000000000-7f0000100000 r--s 00000000 fe:00 1001                       /data/ds/shard-000000.tar', 1024),
  entry('7f0000100000-7f0000200000 r--s 00000000 fe:00 1002                       /data/ds/shard-000001.tar (deleted)', 512),
  entry('7f0000200000-7f0000300000 r--s 00000000 fe:00 1003                       /data/ds2/shard-000000.tar', 256),
  entry('7f0000300000-7f0000400000 r--s 00000000 fe:00 1004                       /data/ds/dir with space/x.tar', 8),
  entry('7f0000400000-7f0000500000 rw-p 00000000 00:00 0 ', 4096),
  entry('7f0000500000-7f0000600000 r--s 00000000 fe:00 1005                       /data/new\\012line/shard-000000.tar', 64),
  entry('7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]', 132),
].join('\n');

describe('residentMappedBytes', () => {
  it('sums the Rss of mappings inside the directories, deleted files included, and nothing else', () => {
    expect(residentMappedBytes(SMAPS, ['/data/ds'])).toBe((1024 + 512 + 8) * 1024);
    expect(residentMappedBytes(SMAPS, ['/data/ds/'])).toBe((1024 + 512 + 8) * 1024);
    // a sibling whose name starts with the directory's is not inside it
    expect(residentMappedBytes(SMAPS, ['/data/ds2'])).toBe(256 * 1024);
    expect(residentMappedBytes(SMAPS, ['/data/ds', '/data/ds2'])).toBe((1024 + 512 + 8 + 256) * 1024);
    expect(residentMappedBytes(SMAPS, ['/data/raw'])).toBe(0);
    // a newline in a directory name appears as \012 in smaps
    expect(residentMappedBytes(SMAPS, ['/data/new\nline'])).toBe(64 * 1024);
    expect(residentMappedBytes('', ['/data/ds'])).toBe(0);
  });

  it.runIf(fs.existsSync('/proc/self/smaps') && nativeAvailable())('counts the shard pages a local dataset maps, opened through a symlink', async () => {
    const dir = path.join(tmpDir('shardkit-mapped-'), 'ds');
    const w = new DatasetWriter({ dir, shardBytes: 256 * 1024 });
    for (let i = 0; i < 64; i++) w.add({ key: `k${String(i).padStart(3, '0')}`, members: { bin: randomBytes(8000) } });
    await w.finish();
    const link = path.join(tmpDir('shardkit-mapped-link-'), 'ds');
    fs.symlinkSync(dir, link);
    expect(ownResidentMappedBytes([link])).toBe(0);
    const ds = await openDataset(link);
    for (let i = 0; i < ds.size; i++) ds.atSync(i);
    const mapped = ownResidentMappedBytes([link]) as number;
    // every sample was read out of the maps: their pages are resident (64 x 8000 bytes and the tar headers)
    expect(mapped).toBeGreaterThanOrEqual(64 * 8000);
    expect(mapped).toBeLessThanOrEqual(fs.readdirSync(dir).reduce((n, f) => n + Math.ceil(fs.statSync(path.join(dir, f)).size / 4096) * 4096, 0));
    await ds.close();
    expect(ownResidentMappedBytes([link])).toBe(0);
  });
});
