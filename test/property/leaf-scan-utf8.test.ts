/**
 * verify's leaf scan takes keys past ASCII (file names in any script) when they are UTF-8 as the reader's fatal
 * decoder takes it, in JavaScript (leaf-keys.ts utf8Key) and in C (verify-scan.c utf8_key): a page with a key that
 * is not UTF-8 goes to decodePage, which names what is wrong. The fatal TextDecoder is the oracle.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IndexEntry } from '../../formats/index-entry.js';
import { PAGE_HEADER_BYTES, decodePage, type LeafPage } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { nativeAddon } from '../../src/native/native.js';
import { utf8Key } from '../../src/verify/leaf-keys.js';
import { LeafScan } from '../../src/verify/leaf-scan.js';
import { layMembers, leafPages, resealedLeaf } from '../helpers/leaf-pages.js';

/** Bytes at UTF-8's edges: ASCII, continuation bounds, the lead bytes that narrow the next byte, and never-valid ones. */
const edgeByte = fc.constantFrom(0x41, 0x2f, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff);
const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** What the fatal decoder says of the bytes: -1 refused, 1 a character past ASCII, 0 ASCII. */
function oracle(bytes: Uint8Array): number {
  try {
    fatal.decode(bytes);
  } catch {
    return -1;
  }
  return bytes.some((b) => b >= 0x80) ? 1 : 0;
}

/** Keys of folders and files named in several scripts (2-, 3- and 4-byte characters), sharing prefixes. */
const wideKey = fc
  .tuple(fc.constantFrom('train', 'Bilder', 'été', '画像', 'ñandú'), fc.nat(20), fc.string({ unit: fc.constantFrom('a', 'é', 'ß', '中', '😀', 'ж', '0'), minLength: 1, maxLength: 5 }))
  .map(([dir, c, name]) => `${dir}/c${c}/${name}`);

const entriesOf = (keys: string[]): IndexEntry[] =>
  [...new Set(keys)].sort(compareKeys).map((key, i) => {
    const { members, length } = layMembers([[['jpg', 'été', '画像'][i % 3] as string, 40, false, 0]], i); // extensions past ASCII too
    return { key, shard: 0, offset: 40 * i, length, members };
  });

const scans = [
  ['JavaScript', (s: LeafScan, page: Uint8Array, n: number) => s.scanJs(page, n), undefined],
  ['native', (s: LeafScan, page: Uint8Array, n: number) => s.scanNative(page, n), nativeAddon()],
] as const;

describe('verify leaf scan: keys past ASCII', () => {
  it('utf8Key answers as the fatal UTF-8 decoder', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 12 }), fc.array(edgeByte, { maxLength: 12 }).map((b) => Uint8Array.from(b))), (bytes) => {
        const padded = new Uint8Array(bytes.length + 4).fill(0x80); // bytes past the length are not looked at
        padded.set(bytes);
        expect(utf8Key(padded, bytes.length)).toBe(oracle(bytes));
      }),
      { numRuns: 5000 },
    );
  });

  for (const [name, scanWith, native] of scans) {
    it.skipIf(name === 'native' && native === undefined)(`takes leaves of UTF-8 keys and reads them as decodePage does (${name})`, () => {
      fc.assert(
        fc.property(fc.uniqueArray(wideKey, { minLength: 1, maxLength: 200 }), (keys) => {
          const scan = new LeafScan(native, true);
          for (const [n, page] of leafPages(entriesOf(keys), 1024)) {
            const leaf = decodePage(page, n, 'idx', true) as LeafPage;
            expect(scanWith(scan, page, n)).toBe(true);
            expect([scan.count, scan.firstKey, scan.lastKey]).toEqual([leaf.entries.length, leaf.entries[0]!.key, leaf.entries.at(-1)!.key]);
            expect(scan.firstKeyIs(leaf.entries[0]!.key)).toBe(true);
          }
        }),
        { numRuns: 60 },
      );
    });

    it.skipIf(name === 'native' && native === undefined)(`takes no leaf whose keys decodePage refuses as not UTF-8 (${name})`, () => {
      fc.assert(
        fc.property(fc.uniqueArray(wideKey, { minLength: 1, maxLength: 120 }), fc.array(fc.tuple(fc.nat(), edgeByte), { minLength: 1, maxLength: 3 }), (keys, edits) => {
          const scan = new LeafScan(native, true);
          for (const [n, clean] of leafPages(entriesOf(keys), 1024)) {
            // rewrite bytes of multi-byte characters (their lead and continuation bytes), the page sealed again
            const page = clean.slice();
            const wide: number[] = [];
            for (let i = PAGE_HEADER_BYTES; i < page.length; i++) if (page[i]! >= 0x80) wide.push(i);
            for (const [at, b] of edits) if (wide.length > 0) page[wide[at % wide.length]!] = b;
            const leaf = resealedLeaf(page, n);
            const took = scanWith(scan, page, n);
            if (leaf === undefined) expect(took).toBe(false);
            else if (took) expect([scan.count, scan.firstKey, scan.lastKey]).toEqual([leaf.entries.length, leaf.entries[0]!.key, leaf.entries.at(-1)!.key]);
          }
        }),
        { numRuns: 300 },
      );
    });
  }

  it('a prefix shared with the key before may cut a character: the key is checked whole', () => {
    // "é" is C3 A9: keys "xé" and "xê" (C3 AA) share "x" and C3; the second's suffix is the lone byte AA
    for (const [, scanWith, native] of scans) {
      if (native === undefined && scanWith === scans[1][1]) continue;
      const scan = new LeafScan(native);
      const [[n, page]] = leafPages(entriesOf(['x/é', 'x/ê']), 1024) as [[number, Uint8Array]];
      expect(scanWith(scan, page, n)).toBe(true);
      expect(scan.lastKey).toBe('x/ê');
      // the shared C3 made C2, an overlong lead byte: both keys stop being UTF-8
      const bad = page.slice();
      bad[bad.indexOf(0xc3)] = 0xc0;
      expect(resealedLeaf(bad, n)).toBeUndefined(); // decodePage refuses it
      expect(scanWith(scan, bad, n)).toBe(false);
    }
  });
});
