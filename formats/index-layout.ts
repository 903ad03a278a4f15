/**
 * The index file: fixed-size pages, page 0 the header, then B+-tree pages, then the shard table.
 * Every constant here follows a table in formats/SPEC.md ("Index file"); change both together.
 */
import { ByteReader, ByteWriter, readU64, utf8Bytes, writeU64 } from './bytes.js';
import { crc32c } from './checksum.js';
import { ErrorCodes, ShardkitError } from './errors.js';

/** `\x89SKIDX\r\n`: the high byte catches 7-bit transfers, CR LF catches newline translation (as PNG does). */
export const INDEX_MAGIC = Uint8Array.of(0x89, 0x53, 0x4b, 0x49, 0x44, 0x58, 0x0d, 0x0a);
export const INDEX_FORMAT_VERSION = 1;
export const DEFAULT_PAGE_SIZE = 4096;
export const MIN_PAGE_SIZE = 1024;
export const MAX_PAGE_SIZE = 65536;

// Header (page 0), all little-endian.
export const HDR_MAGIC = 0; //          u8[8]
export const HDR_VERSION = 8; //        u16  format version
export const HDR_LAYOUT = 10; //        u8   0 = tar, 1 = packed
export const HDR_RESERVED0 = 11; //     u8   zero
export const HDR_PAGE_SIZE = 12; //     u32
export const HDR_ENTRY_COUNT = 16; //   u64  samples
export const HDR_ROOT_PAGE = 24; //     u32  0 when empty
export const HDR_HEIGHT = 28; //        u32  0 empty, 1 root is a leaf
export const HDR_PAGE_COUNT = 32; //    u32  pages including page 0
export const HDR_FIRST_LEAF = 36; //    u32  0 when empty
export const HDR_SHARD_COUNT = 40; //   u32
export const HDR_TABLE_CRC = 44; //     u32  CRC32C of the shard table bytes
export const HDR_TABLE_OFFSET = 48; //  u64  byte offset of the shard table (= page count * page size)
export const HDR_TABLE_LENGTH = 56; //  u64
export const HDR_MEMBER_COUNT = 64; //  u64  members over all samples
export const HDR_SPAN_BYTES = 72; //    u64  sum of all sample spans (stored bytes one epoch reads)
export const HDR_CRC = 124; //          u32  CRC32C of bytes [0, 124)
export const HEADER_BYTES = 128;

export type Layout = 'tar' | 'packed';
export const LAYOUT_CODES: Record<Layout, number> = { tar: 0, packed: 1 };

/**
 * What an error about a damaged or lost index tells the user to do, by the dataset's layout (undefined: not known).
 * `shardkit reindex` rebuilds an index from tar headers; packed shards hold no names or sizes, so theirs cannot be.
 */
export function indexRemedy(layout: Layout | undefined): string {
  if (layout === 'tar') return 'run `shardkit reindex`';
  if (layout === 'packed') return 'restore the index from a backup or pack the dataset again (`shardkit reindex` cannot rebuild a packed index)';
  return 'run `shardkit reindex` (tar layout) or restore the index from a backup (packed layout)';
}

export interface IndexHeader {
  version: number;
  layout: Layout;
  pageSize: number;
  entryCount: number;
  rootPage: number;
  height: number;
  pageCount: number;
  firstLeaf: number;
  shardCount: number;
  tableCrc: number;
  tableOffset: number;
  tableLength: number;
  memberCount: number;
  spanBytes: number;
  /** CRC32C of the header itself: the index's identity, recorded in the manifest. */
  crc: number;
}

export function validatePageSize(pageSize: number): void {
  const isPow2 = Number.isInteger(pageSize) && pageSize > 0 && (pageSize & (pageSize - 1)) === 0;
  if (!isPow2 || pageSize < MIN_PAGE_SIZE || pageSize > MAX_PAGE_SIZE) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected a power of two between ${MIN_PAGE_SIZE} and ${MAX_PAGE_SIZE} for pageSize but received ${pageSize}`,
    );
  }
}

/** Encodes the header into a full page (the rest of page 0 is zero). */
export function encodeIndexHeader(h: Omit<IndexHeader, 'crc' | 'version'>): { page: Uint8Array; crc: number } {
  const page = new Uint8Array(h.pageSize);
  const v = new DataView(page.buffer);
  page.set(INDEX_MAGIC, HDR_MAGIC);
  v.setUint16(HDR_VERSION, INDEX_FORMAT_VERSION, true);
  v.setUint8(HDR_LAYOUT, LAYOUT_CODES[h.layout]);
  v.setUint32(HDR_PAGE_SIZE, h.pageSize, true);
  writeU64(v, HDR_ENTRY_COUNT, h.entryCount);
  v.setUint32(HDR_ROOT_PAGE, h.rootPage, true);
  v.setUint32(HDR_HEIGHT, h.height, true);
  v.setUint32(HDR_PAGE_COUNT, h.pageCount, true);
  v.setUint32(HDR_FIRST_LEAF, h.firstLeaf, true);
  v.setUint32(HDR_SHARD_COUNT, h.shardCount, true);
  v.setUint32(HDR_TABLE_CRC, h.tableCrc, true);
  writeU64(v, HDR_TABLE_OFFSET, h.tableOffset);
  writeU64(v, HDR_TABLE_LENGTH, h.tableLength);
  writeU64(v, HDR_MEMBER_COUNT, h.memberCount);
  writeU64(v, HDR_SPAN_BYTES, h.spanBytes);
  const crc = crc32c(page.subarray(0, HDR_CRC));
  v.setUint32(HDR_CRC, crc, true);
  return { page, crc };
}

/**
 * Decodes and checks the header. Wrong magic, a future version and a damaged header are three different errors,
 * as in LMDB; `fileSize` (when known) catches truncation before any page is read.
 */
export function decodeIndexHeader(bytes: Uint8Array, file: string, fileSize?: number): IndexHeader {
  // callers pass page 0 whole when they have it: its tail after the header must be zero (nothing hides there)
  if (bytes.length < HEADER_BYTES) {
    throw new ShardkitError(ErrorCodes.TRUNCATED, `${file}: index is ${bytes.length} bytes, shorter than its ${HEADER_BYTES}-byte header`, { file });
  }
  for (let i = 0; i < INDEX_MAGIC.length; i++) {
    if (bytes[HDR_MAGIC + i] !== INDEX_MAGIC[i]) {
      throw new ShardkitError(ErrorCodes.BAD_MAGIC, `${file}: not a shardkit index (wrong magic bytes)`, { file });
    }
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const version = v.getUint16(HDR_VERSION, true);
  if (version > INDEX_FORMAT_VERSION) {
    throw new ShardkitError(
      ErrorCodes.UNSUPPORTED_VERSION,
      `${file}: index format version ${version} is newer than this shardkit reads (${INDEX_FORMAT_VERSION}); upgrade shardkit`,
      { file },
    );
  }
  const crc = v.getUint32(HDR_CRC, true);
  // the layout byte says which remedy applies only once the checksum has vouched for it
  let known: Layout | undefined;
  const corrupt = (why: string): never => {
    throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${file}: index header ${why}; ${indexRemedy(known)}`, { file });
  };
  if (crc32c(bytes.subarray(0, HDR_CRC)) !== crc) corrupt('fails its checksum');
  if (version === 0) corrupt('has version 0');
  const layoutCode = v.getUint8(HDR_LAYOUT);
  const layout = (Object.keys(LAYOUT_CODES) as Layout[]).find((k) => LAYOUT_CODES[k] === layoutCode);
  if (layout === undefined) return corrupt(`names unknown layout ${layoutCode}`);
  known = layout;
  const u64 = (off: number): number => readU64(v, off) ?? corrupt(`field at byte ${off} exceeds 2^53`);
  const h: IndexHeader = {
    version,
    layout,
    pageSize: v.getUint32(HDR_PAGE_SIZE, true),
    entryCount: u64(HDR_ENTRY_COUNT),
    rootPage: v.getUint32(HDR_ROOT_PAGE, true),
    height: v.getUint32(HDR_HEIGHT, true),
    pageCount: v.getUint32(HDR_PAGE_COUNT, true),
    firstLeaf: v.getUint32(HDR_FIRST_LEAF, true),
    shardCount: v.getUint32(HDR_SHARD_COUNT, true),
    tableCrc: v.getUint32(HDR_TABLE_CRC, true),
    tableOffset: u64(HDR_TABLE_OFFSET),
    tableLength: u64(HDR_TABLE_LENGTH),
    memberCount: u64(HDR_MEMBER_COUNT),
    spanBytes: u64(HDR_SPAN_BYTES),
    crc,
  };
  try {
    validatePageSize(h.pageSize);
  } catch {
    corrupt(`has invalid page size ${h.pageSize}`);
  }
  for (let i = HEADER_BYTES; i < Math.min(bytes.length, h.pageSize); i++) if (bytes[i] !== 0) corrupt('page 0 holds bytes after the header');
  if (h.tableOffset !== h.pageCount * h.pageSize) corrupt('places the shard table away from the end of the pages');
  const empty = h.entryCount === 0;
  if (empty !== (h.rootPage === 0) || empty !== (h.height === 0) || empty !== (h.firstLeaf === 0)) {
    corrupt('has an inconsistent empty tree');
  }
  if (!empty && (h.rootPage >= h.pageCount || h.firstLeaf >= h.pageCount || h.height > 64)) {
    corrupt('points outside its pages');
  }
  if (fileSize !== undefined && fileSize !== h.tableOffset + h.tableLength) {
    const code = fileSize < h.tableOffset + h.tableLength ? ErrorCodes.TRUNCATED : ErrorCodes.CORRUPT_INDEX;
    throw new ShardkitError(code, `${file}: index is ${fileSize} bytes but its header says ${h.tableOffset + h.tableLength}`, { file });
  }
  return h;
}

/** One shard as the index records it. */
export interface ShardRecord {
  /** File name relative to the dataset directory. */
  file: string;
  bytes: number;
  samples: number;
  /** CRC32C of the whole shard file. */
  crc32c: number;
  /** CRC32C of the shard's first min(bytes, FINGERPRINT_BYTES) bytes: checked cheaply when a shard is opened. */
  fingerprint: number;
}

export const FINGERPRINT_BYTES = 4096;

/** Shard table: varint count, then per shard: varint name length, UTF-8 name, varint bytes, varint samples, u32 crc32c, u32 fingerprint. */
export function encodeShardTable(shards: readonly ShardRecord[]): Uint8Array {
  const w = new ByteWriter();
  w.varint(shards.length);
  for (const s of shards) {
    const name = utf8Bytes(s.file);
    w.varint(name.length).bytes(name).varint(s.bytes).varint(s.samples).u32(s.crc32c).u32(s.fingerprint);
  }
  return w.toBytes();
}

export function decodeShardTable(bytes: Uint8Array, header: IndexHeader, file: string): ShardRecord[] {
  if (crc32c(bytes) !== header.tableCrc) {
    throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${file}: shard table fails its checksum; ${indexRemedy(header.layout)}`, { file });
  }
  const r = new ByteReader(bytes, ErrorCodes.CORRUPT_INDEX, `${file}: shard table`);
  const count = r.varint();
  if (count !== header.shardCount) r.fail(`lists ${count} shards but the header says ${header.shardCount}`);
  const shards: ShardRecord[] = [];
  for (let i = 0; i < count; i++) {
    const file = r.utf8(r.varint());
    const bytesN = r.varint();
    const samples = r.varint();
    shards.push({ file, bytes: bytesN, samples, crc32c: r.u32(), fingerprint: r.u32() });
  }
  if (r.pos !== bytes.length) r.fail('has trailing bytes');
  return shards;
}
