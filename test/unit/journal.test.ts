/** The pack's resume journal: a rewrite that fails partway (a kill, a full disk) leaves the previous journal whole. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JournalWriter, WORK_DIR, readJournal, type JournalShard } from '../../src/pack/journal.js';
import { tmpDir } from '../helpers/tmp.js';

const shardLine = (i: number): JournalShard => ({
  type: 'shard',
  shard: { file: `shard-${String(i).padStart(6, '0')}.tar`, bytes: 10_240, samples: 3, crc32c: 1, fingerprint: 2 },
  runs: 0,
  cursor: 3 * (i + 1),
  skipped: [],
  originalBytes: 30,
  storedBytes: 30,
  members: 3,
});

const realWrite = fs.writeSync;
afterEach(() => {
  fs.writeSync = realWrite;
});

describe('JournalWriter', () => {
  it('a rewrite that dies halfway leaves the previous journal readable, and a whole rewrite replaces it', () => {
    const out = tmpDir();
    fs.mkdirSync(path.join(out, WORK_DIR));
    const journal = new JournalWriter(out);
    const options = { layout: 'tar', shardBytes: 65536 };
    journal.begin(options);
    journal.append(shardLine(0));
    journal.append(shardLine(1));
    const before = readJournal(out);
    expect(before?.shards.length).toBe(2);
    // the write fails after half of the new text (the rewrite goes to a temporary renamed over the journal)
    fs.writeSync = ((fd: number, data: string | NodeJS.ArrayBufferView): never => {
      const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      realWrite(fd, bytes.subarray(0, 20));
      throw new Error('killed');
    }) as typeof fs.writeSync;
    expect(() => journal.rewrite({ options, shards: [shardLine(0)] })).toThrow();
    fs.writeSync = realWrite;
    expect(readJournal(out)).toEqual(before);
    journal.rewrite({ options, shards: [shardLine(0)] });
    expect(readJournal(out)).toEqual({ options, shards: [shardLine(0)] });
    expect(fs.readdirSync(path.join(out, WORK_DIR))).toEqual(['journal.jsonl']);
  });
});
