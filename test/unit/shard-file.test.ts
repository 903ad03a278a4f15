import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import { ShardFile } from '../../src/pack/shard-file.js';
import { tmpDir } from '../helpers/tmp.js';

describe('ShardFile', () => {
  it('writes a run longer than one write(2) may take in pieces, with the same bytes and checksum', () => {
    // fs.writeSync refuses more than 2^31 - 1 bytes a call; a 64 KiB limit stands in for the real 1 GiB one
    const limit = 64 << 10;
    const dir = tmpDir();
    const data = new Uint8Array(5 * limit + 123).map((_, i) => (i * 7) & 0xff);
    const write = vi.spyOn(fs, 'writeSync');
    try {
      const file = new ShardFile(path.join(dir, 'a.tmp'), path.join(dir, 'a.tar'), limit);
      file.write(data.subarray(0, 10));
      file.write(data.subarray(10));
      const sums = file.commit(false);
      const lengths = write.mock.calls.map((c) => c[3] as number);
      expect(Math.max(...lengths)).toBeLessThanOrEqual(limit);
      expect(lengths.reduce((a, b) => a + b, 0)).toBe(data.length);
      expect(sums.crc32c).toBe(crc32c(data));
    } finally {
      write.mockRestore();
    }
    expect(fs.readFileSync(path.join(dir, 'a.tar')).equals(Buffer.from(data))).toBe(true);
  });
});
