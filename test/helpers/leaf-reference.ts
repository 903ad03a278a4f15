/**
 * The leaf decoder as it was before formats/leaf-decode.ts: record by record through decodeLeafRecord (which the
 * index writer still uses), keys compared as strings. The property test holds the column decoder to it.
 */
import { ByteReader } from '../../formats/bytes.js';
import { ErrorCodes } from '../../formats/errors.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import { PAGE_COUNT, PAGE_HEADER_BYTES, PAGE_LINK, PAGE_NO, decodeLeafRecord, type LeafRecordState } from '../../formats/index-page.js';
import { compareKeys, isSimpleKey } from '../../formats/key-order.js';

export interface ReferenceLeaf {
  keys: string[];
  simple: boolean;
  entries: IndexEntry[];
  /** Per record: its lone member's CRC32C, or -1 (what LeafPage.rows holds in loneCrc32c). */
  loneCrc32c: number[];
}

/**
 * Decodes the records of a leaf page whose header (checksum, number, type, count) is known to be good; with `upTo`,
 * its records up to the first one it accepts (a decode-to-slot's prefix).
 */
export function referenceLeaf(page: Uint8Array, file: string, upTo?: (entry: IndexEntry, i: number) => boolean): ReferenceLeaf {
  const v = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const pageNo = v.getUint32(PAGE_NO, true);
  const count = v.getUint16(PAGE_COUNT, true);
  const next = v.getUint32(PAGE_LINK, true);
  const r = new ByteReader(page, ErrorCodes.CORRUPT_INDEX, `${file}: page ${pageNo}`, PAGE_HEADER_BYTES);
  if (next !== 0 && next <= pageNo) r.fail(`links to earlier page ${next}`);
  const keys: string[] = [];
  const entries: IndexEntry[] = [];
  const state: LeafRecordState = { prevKey: new Uint8Array(0), prev: undefined };
  let simple = true;
  for (let i = 0; i < count; i++) {
    const entry = decodeLeafRecord(r, state, i);
    if (i > 0 && compareKeys(keys[i - 1] as string, entry.key) >= 0) r.fail(`record ${i} is out of key order`);
    keys.push(entry.key);
    entries.push(entry);
    simple &&= isSimpleKey(entry.key);
    if (upTo?.(entry, i) === true) break;
  }
  const loneCrc32c = entries.map((e) => (e.members.length === 1 && e.members[0]!.codec === Codec.none ? e.members[0]!.crc32c : -1));
  return { keys, simple, entries, loneCrc32c };
}
