/**
 * decodedPageBytes: what a decoded index page costs in memory, the page cache's accounting. Checked term by term,
 * against a page's bytes (a leaf of tiny samples costs ~20x its page: a budget counting page bytes was not one), and
 * against what V8 really holds for decoded leaves (bench/page-cost.mjs in a child process with --expose-gc).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LeafPage } from '../../formats/index-page.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { buildKeyTable } from '../../src/read/leaf-key-table.js';
import { FLAT_STRING_HEADER, MIN_DECODED_RECORD_BYTES, OBJECT_OVERHEAD, POINTER_BYTES, SLICED_STRING_BYTES, TYPED_ARRAY_OVERHEAD, decodedPageBytes, stringBytes, typedArrayBytes } from '../../src/read/page-cost.js';
import { buildMemoryIndex } from '../helpers/memory-index.js';
import { tmpDir } from '../helpers/tmp.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** 24-byte keys as bench/scale.mjs makes them (class folders of 1,000 samples). */
const keyOf = (i: number) => `train/c${String(Math.floor(i / 1000)).padStart(6, '0')}/${String(i).padStart(9, '0')}`;
const entry = (key: string, i: number) => ({ key, shard: 0, offset: i * 8, length: 8, members: [{ ext: 'bin', offset: 0, size: 8, storedSize: 8, codec: 0 as const, crc32c: i }] });

/** The first leaf of an index of `keys` (4 KiB pages). */
function firstLeaf(keys: string[]): LeafPage {
  const idx = buildMemoryIndex(keys.map(entry), 4096);
  const page = idx.load(idx.tree.header.firstLeaf);
  if (page.type !== 'leaf') throw new Error('not a leaf');
  return page;
}

describe('decodedPageBytes', () => {
  it('counts a leaf term by term: columns, keys (one or two bytes a character), extensions, and its key table once built', () => {
    const ascii = firstLeaf(['a/0001', 'a/0002', 'a/0003']);
    const columns = 2 * TYPED_ARRAY_OVERHEAD + ascii.rows.byteLength + ascii.memberRows.byteLength;
    expect(ascii.memberRows.length).toBe(0); // lone members live in their rows
    const keys = OBJECT_OVERHEAD + 3 * POINTER_BYTES + 3 * (FLAT_STRING_HEADER + 8); // 6 characters, rounded to 8
    const exts = OBJECT_OVERHEAD + POINTER_BYTES + FLAT_STRING_HEADER + 8;
    expect(decodedPageBytes(ascii)).toBe(OBJECT_OVERHEAD + keys + columns + exts);
    const before = decodedPageBytes(ascii);
    ascii.keyTable = buildKeyTable(ascii.keys);
    expect(decodedPageBytes(ascii)).toBe(before + typedArrayBytes(ascii.keyTable));
    expect(typedArrayBytes(ascii.keyTable)).toBe(TYPED_ARRAY_OVERHEAD + ascii.keyTable.byteLength);
    // the same lengths in characters past Latin-1: two bytes a character (12, rounded to 16)
    const wide = firstLeaf(['\u4e00/0001', '\u4e00/0002', '\u4e00/0003']);
    expect(decodedPageBytes(wide) - decodedPageBytes(firstLeaf(['\u00e9/0001', '\u00e9/0002', '\u00e9/0003']))).toBe(3 * 8);
    // keys long enough to be slices of the leaf's key text: the slice and their characters
    expect(stringBytes(12, false)).toBe(FLAT_STRING_HEADER + 16);
    expect(stringBytes(13, false)).toBe(SLICED_STRING_BYTES + 13);
    expect(stringBytes(13, true)).toBe(FLAT_STRING_HEADER + 32);
  });

  it('counts a branch: its keys and its two typed arrays', () => {
    const keys = Array.from({ length: 2000 }, (_, i) => keyOf(i));
    const idx = buildMemoryIndex(keys.map(entry), 4096);
    const root = idx.load(idx.tree.header.rootPage);
    if (root.type !== 'branch') throw new Error('the root should be a branch');
    const keyBytes = root.keys.reduce((t, k) => t + stringBytes(k.length, false), 0);
    expect(decodedPageBytes(root)).toBe(2 * OBJECT_OVERHEAD + root.keys.length * POINTER_BYTES + keyBytes + typedArrayBytes(root.children) + typedArrayBytes(root.starts));
  });

  it('is not vacuous: a leaf of tiny samples costs ~15x its 4 KiB page, and at least MIN_DECODED_RECORD_BYTES a record', () => {
    const keys = Array.from({ length: 2000 }, (_, i) => keyOf(i));
    const leaf = firstLeaf(keys);
    leaf.keyTable = buildKeyTable(leaf.keys);
    const perRecord = decodedPageBytes(leaf) / leaf.keys.length;
    expect(leaf.keys.length).toBeGreaterThan(300);
    expect(perRecord).toBeGreaterThan(130);
    expect(perRecord).toBeLessThan(150);
    expect(decodedPageBytes(leaf)).toBeGreaterThan(12 * 4096);
    expect(perRecord).toBeGreaterThan(MIN_DECODED_RECORD_BYTES);
  });

  describe('against what the heap holds (node --expose-gc, built dist)', () => {
    let dir: string;
    beforeAll(async () => {
      dir = tmpDir();
      const w = new DatasetWriter({ dir, layout: 'packed' });
      const body = new Uint8Array(8);
      for (let i = 0; i < 150_000; i++) w.add({ key: keyOf(i), members: { bin: body } });
      await w.finish();
    });

    for (const tables of [true, false]) {
      it(`decoded leaves ${tables ? 'with' : 'without'} key tables: the estimate is within 0.8-1.25x of heapUsed + external`, () => {
        const args = ['--expose-gc', path.join(ROOT, 'bench/page-cost.mjs'), dir, '--pages', '400', ...(tables ? [] : ['--no-key-tables'])];
        const out = JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8' })) as { leaves: number; estimateOverMeasured: number; measuredPerRecord: number };
        expect(out.leaves).toBeGreaterThan(300);
        expect(out.estimateOverMeasured).toBeGreaterThan(0.8);
        expect(out.estimateOverMeasured).toBeLessThan(1.25);
        expect(out.measuredPerRecord).toBeGreaterThan(100); // leaves of tiny samples: ~120-140 bytes a record
      });
    }
  });
});
