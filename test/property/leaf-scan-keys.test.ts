/**
 * leaf-scan.ts keeps a leaf's first and last keys as bytes; the walk (check-index.ts) compares them without making
 * strings: firstKeyIs against the parent's key, firstKeyAfter against the last key of the leaf before. Both must
 * answer what the string comparisons they replace answer (=== and compareKeys), with and without the addon.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IndexEntry } from '../../formats/index-entry.js';
import { compareKeys } from '../../formats/key-order.js';
import { nativeAddon } from '../../src/native/native.js';
import { LeafScan } from '../../src/verify/leaf-scan.js';
import { layMembers, leafPages } from '../helpers/leaf-pages.js';

/** ASCII keys that pass the writer's rules, sharing prefixes often (the case prefix compression and order meet). */
const keyArb = fc.oneof(
  fc.tuple(fc.nat(30), fc.nat(999)).map(([c, i]) => `train/c${c}/${String(i).padStart(3, '0')}`),
  fc.string({ unit: fc.constantFrom('a', 'b', 'z', '0', '~', '_'), minLength: 1, maxLength: 6 }),
);

const entriesOf = (keys: string[]): IndexEntry[] =>
  [...new Set(keys)].sort(compareKeys).map((key, i) => {
    const { members, length } = layMembers([['bin', 8, false, 0]], i);
    return { key, shard: 0, offset: 8 * i, length, members };
  });

const bytesOf = (key: string): Uint8Array => Uint8Array.from(key, (c) => c.charCodeAt(0));

describe('LeafScan keys as bytes', () => {
  for (const [name, native] of [
    ['JavaScript', undefined],
    ['native', nativeAddon()],
  ] as const) {
    it(`firstKeyIs and firstKeyAfter answer as === and compareKeys (${name} scan)`, () => {
      fc.assert(
        fc.property(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 200 }), fc.array(keyArb, { maxLength: 8 }), (keys, others) => {
          const entries = entriesOf(keys);
          const scan = new LeafScan(native);
          let first = 0;
          for (const [pageNo, page] of leafPages(entries, 1024)) {
            expect(native === undefined ? scan.scanJs(page, pageNo) : scan.scanNative(page, pageNo)).toBe(true);
            const firstKey = (entries[first] as IndexEntry).key;
            first += scan.count;
            expect(scan.firstKey).toBe(firstKey);
            expect(scan.lastKey).toBe((entries[first - 1] as IndexEntry).key);
            for (const k of [firstKey, scan.lastKey, firstKey.slice(0, -1), `${firstKey}a`, ...others]) {
              expect(scan.firstKeyIs(k)).toBe(k === firstKey);
              // a longer buffer than the key: only prev[0, length) counts
              const prev = new Uint8Array(k.length + 3).fill(0x7f);
              prev.set(bytesOf(k));
              expect(scan.firstKeyAfter(prev, k.length)).toBe(compareKeys(k, firstKey) < 0);
            }
          }
          expect(first).toBe(entries.length);
        }),
        { numRuns: 100 },
      );
    });
  }
});
