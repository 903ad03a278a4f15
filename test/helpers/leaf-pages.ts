/**
 * Index leaves for the leaf-scan property tests (test/property/leaf-scan.test.ts, native-verify.test.ts): members
 * laid out from a generated shape, the leaf pages a BTreeBuilder writes for a list of entries, and a leaf sealed
 * as given (out of order, repeated keys: what a BTreeBuilder refuses to write).
 */
import { BTreeBuilder } from '../../formats/btree-builder.js';
import type { IndexEntry, MemberEntry } from '../../formats/index-entry.js';
import { LeafRecordEncoder, PAGE_CRC, PAGE_HEADER_BYTES, PageType, decodePage, pageChecksum, sealPage, type LeafPage } from '../../formats/index-page.js';

/** A member's shape: extension, size, LZ4 or stored (stored at half its size), gap before it (not the first). */
export type MemberShape = [ext: string, size: number, lz4: boolean, gap: number];

/** The members of record `i` laid out one after the other from 0 (with their gaps), and the span they fill. */
export function layMembers(shape: MemberShape[], i: number): { members: MemberEntry[]; length: number } {
  const members: MemberEntry[] = [];
  let at = 0;
  shape.forEach(([ext, size, lz4, gap], m) => {
    const storedSize = lz4 ? Math.floor(size / 2) : size;
    const memberOffset = m === 0 ? 0 : at + gap;
    members.push({ ext: `${ext}${m === 0 ? '' : m}`, offset: memberOffset, size, storedSize, codec: lz4 ? 1 : 0, crc32c: (i * 2654435761 + m) >>> 0 });
    at = memberOffset + storedSize;
  });
  return { members, length: at };
}

/** The leaf pages (page number, bytes) a BTreeBuilder writes for `entries` (sorted) with `pageSize`-byte pages. */
export function leafPages(entries: IndexEntry[], pageSize: number): [number, Uint8Array][] {
  const pages: [number, Uint8Array][] = [];
  const b = new BTreeBuilder(pageSize, (n, page) => pages.push([n, page.slice()]));
  for (const e of entries) b.add(e);
  b.finish();
  return pages.filter(([, page]) => page[0] === 2);
}

/** One sealed leaf page (number 3, no next leaf) holding `entries` in the order given, sorted or not. */
export function sealedLeaf(entries: IndexEntry[], pageSize = 1024): Uint8Array {
  const bytes = new Uint8Array(pageSize);
  const encoder = new LeafRecordEncoder();
  let at = PAGE_HEADER_BYTES;
  for (const e of entries) {
    const record = encoder.encode(e, new TextEncoder().encode(e.key));
    bytes.set(record, at);
    at += record.length;
  }
  sealPage(bytes, PageType.leaf, entries.length, 3, 0);
  return bytes;
}

/** `pageSize`, or larger pages for records of many members (60-70 with long extensions outgrow 1 KiB, 250-260 4 KiB). */
export function roomFor(entries: IndexEntry[], pageSize: number): number {
  const most = Math.max(...entries.map((e) => e.members.length));
  return most > 100 ? Math.max(pageSize, 16384) : most > 20 ? Math.max(pageSize, 4096) : pageSize;
}

/** Seals a page changed on purpose (its checksum made to match again) and decodes it: undefined when decodePage refuses it. */
export function resealedLeaf(page: Uint8Array, pageNo: number): LeafPage | undefined {
  new DataView(page.buffer, page.byteOffset).setUint32(PAGE_CRC, pageChecksum(page), true);
  try {
    return decodePage(page, pageNo, 'idx', true) as LeafPage;
  } catch {
    return undefined;
  }
}
