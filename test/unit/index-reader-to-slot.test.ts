/**
 * Decode-to-slot (IndexReader with an index larger than its page cache): synchronous lookups decode a leaf up to the
 * record they want on a first visit, and whole (cached) on the next; they answer what a reader whose cache holds the
 * whole index answers, and refuse a damaged leaf with its words.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { PAGE_COUNT, PAGE_HEADER_BYTES, PageType, sealPage } from '../../formats/index-page.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { FileSource } from '../../src/io/file-source.js';
import { IndexReader } from '../../src/read/index-reader.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 3000;
const PAGE_SIZE = 1024;
const keyOf = (i: number) => `s/${String(i).padStart(5, '0')}`;
let indexFile: string;

/** A reader of `file` whose page cache holds a few decoded pages (32 KiB), and one that holds every page. */
async function readers(file: string): Promise<{ small: IndexReader; whole: IndexReader; close: () => Promise<void> }> {
  const small = await IndexReader.open(await FileSource.open(file), 32 << 10);
  const whole = await IndexReader.open(await FileSource.open(file), 64 << 20);
  return { small, whole, close: async () => void (await Promise.all([small.close(), whole.close()])) };
}

/** What a lookup answered: the record (key, entry) or the error's code and message. */
function outcome(f: () => { key: string; entry: unknown } | undefined): unknown {
  try {
    return f();
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { code: e.code, message: e.message };
  }
}

beforeAll(async () => {
  const dir = tmpDir();
  const w = new DatasetWriter({ dir, pageSize: PAGE_SIZE, shardBytes: 64 * 1024 });
  for (let i = 0; i < N; i++) w.add({ key: keyOf(i), members: i % 5 === 0 ? { jpg: new Uint8Array([i & 255]), cls: new Uint8Array([1, 2]) } : { bin: new Uint8Array(1 + (i % 17)) } });
  await w.finish();
  indexFile = path.join(dir, INDEX_FILE);
});

describe('IndexReader: decode-to-slot past the page cache', () => {
  it('is on when the index has more pages than the cache holds, and answers every position and key as a whole-index cache does', async () => {
    const { small, whole, close } = await readers(indexFile);
    expect(small.decodeToSlot).toBe(true); // else the test would not test it
    expect(whole.decodeToSlot).toBe(false);
    let records = 0;
    // a shuffled walk (a stride prime to N), then the keys in another
    for (let k = 0; k < N; k++) {
      const p = (k * 1237) % N;
      const hit = small.leafOfSync(p);
      const want = whole.leafOfSync(p);
      expect(hit.leaf.keys[p - hit.base]).toBe(keyOf(p));
      expect(hit.leaf.entries[p - hit.base]).toEqual(want.leaf.entries[p - want.base]);
      if (hit.leaf.keys.length === 1) records++;
    }
    for (let k = 0; k < N; k++) {
      const i = (k * 2011) % N;
      const found = small.findSlotSync(keyOf(i));
      expect(found?.leaf.entries[found.slot]).toEqual(whole.findSync(keyOf(i)));
    }
    expect(records).toBeGreaterThan(N / 10); // answered from a record alone, often
    for (const absent of ['', 'a', 's/', 's/00001x', `${keyOf(1234)}0`, 's/99999', 'z', 's/0\u00e9', 's/0\u{1f600}']) {
      expect(small.findSlotSync(absent)).toBeUndefined();
      expect(whole.findSlotSync(absent)).toBeUndefined();
    }
    await close();
  });

  it('answers a first visit from the leaf decoded in part (not cached), a second from the leaf decoded whole and cached', async () => {
    const { small, close } = await readers(indexFile);
    const p = 1500;
    const first = small.leafOfSync(p);
    expect(first.leaf.keys).toEqual([keyOf(p)]);
    expect(first.base).toBe(p);
    expect(small.cache.has(first.leaf.pageNo)).toBe(false);
    const misses = small.cache.misses; // the branches above are cached now: one miss, the leaf's
    const second = small.leafOfSync(p + 1);
    expect(small.cache.misses).toBe(misses + 1);
    expect(second.leaf.keys.length).toBeGreaterThan(2);
    expect(second.leaf.keys[p + 1 - second.base]).toBe(keyOf(p + 1));
    expect(small.cache.has(second.leaf.pageNo)).toBe(true);
    // a neighbour now comes from the cached leaf, by key too
    const near = small.findSlotSync(keyOf(p + 2));
    expect(near?.leaf).toBe(second.leaf);
    // the key path: a first visit to another leaf finds the record alone
    const far = small.findSlotSync(keyOf(10));
    expect(far?.leaf.keys).toEqual([keyOf(10)]);
    expect(small.cache.has(far?.leaf.pageNo as number)).toBe(false);
    await close();
  });

  it('refuses a damaged leaf in the words a whole decode uses: a record that is not UTF-8, a count its parent does not state', async () => {
    const bytes = fs.readFileSync(indexFile);
    const { whole, close } = await readers(indexFile);
    const p = 1500;
    const leafNo = whole.leafOfSync(p).leaf.pageNo;
    await close();
    const at = leafNo * PAGE_SIZE;
    const page = new Uint8Array(bytes.buffer, bytes.byteOffset + at, PAGE_SIZE);
    const count = new DataView(page.buffer, page.byteOffset).getUint16(PAGE_COUNT, true);
    const dir = tmpDir();
    // record 0's first key byte (after its shared and suffix lengths, a byte each) made 0xff; then a count one short
    const badKey = Uint8Array.from(page);
    badKey[PAGE_HEADER_BYTES + 2] = 0xff;
    sealPage(badKey, PageType.leaf, count, leafNo, new DataView(page.buffer, page.byteOffset).getUint32(12, true));
    const shortCount = Uint8Array.from(page);
    sealPage(shortCount, PageType.leaf, count - 1, leafNo, new DataView(page.buffer, page.byteOffset).getUint32(12, true));
    for (const [name, damaged] of [['key', badKey], ['count', shortCount]] as const) {
      const file = path.join(dir, `${name}.skidx`);
      const copy = Buffer.from(bytes);
      copy.set(damaged, at);
      fs.writeFileSync(file, copy);
      const r = await readers(file);
      const base = r.whole.leafOfSync(0); // another leaf: fine
      expect(base.leaf.keys[0]).toBe(keyOf(0));
      // each reader fresh for the damaged leaf: the small one decodes it in part
      const want = outcome(() => {
        const h = r.whole.leafOfSync(p);
        return { key: h.leaf.keys[p - h.base] as string, entry: h.leaf.entries[p - h.base] };
      });
      const got = outcome(() => {
        const h = r.small.leafOfSync(p);
        return { key: h.leaf.keys[p - h.base] as string, entry: h.leaf.entries[p - h.base] };
      });
      expect(want).toMatchObject({ code: ErrorCodes.CORRUPT_INDEX });
      expect(got).toEqual(want);
      expect(outcome(() => r.small.findSlotSync(keyOf(p)) && undefined)).toEqual(want);
      await r.close();
    }
  });
});
