/** Turns the bytes of one sample span into a Sample: slice members, decompress, verify checksums. */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import { MEMBER_COLUMNS, MemberColumn, RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import { lz4DecompressMember } from '../../formats/lz4.js';
import { setMember, type Sample } from '../../formats/sample.js';

export interface DecodeContext {
  /** Dataset location, for messages. */
  dataset: string;
  shard: string;
  verify: boolean;
  /** The CRC32C to verify with (the native addon's when built, else formats/checksum.ts crc32c). */
  crc32c: (bytes: Uint8Array) => number;
  /** Told when a member of this shard fails its check, before the error is thrown (the shard cache drops its copy). */
  onDamage?: () => void;
}

/**
 * Members of an uncompressed sample are views into `span` (no copy); compressed ones are fresh buffers.
 * With `verify`, a CRC32C mismatch throws SHARDKIT_ERR_CHECKSUM naming dataset, shard, key and offset.
 * `firstMemberCrc32c` is the CRC32C of the first member's stored bytes when the read already computed it.
 */
export function decodeSpan(entry: IndexEntry, span: Uint8Array, ctx: DecodeContext, firstMemberCrc32c?: number): Sample {
  const members: Record<string, Uint8Array> = {};
  const list = entry.members;
  for (let i = 0; i < list.length; i++) {
    const m = list[i] as MemberEntry;
    const bytes = decodeMember(entry, m, span.subarray(m.offset, m.offset + m.storedSize), ctx, i === 0 ? firstMemberCrc32c : undefined);
    setMember(members, m.ext, bytes);
  }
  return { key: entry.key, members };
}

/**
 * A sample read into `span` (its whole span), decoded; `crc`: the lone member's CRC32C when the read computed it.
 * One member filling the whole span, the common case, is the span itself (no second view, no loop).
 */
export function decodeRead(entry: IndexEntry, only: MemberEntry | undefined, span: Uint8Array, ctx: DecodeContext, crc: number | undefined): Sample {
  if (only !== undefined && only.offset === 0 && only.storedSize === span.length) {
    return { key: entry.key, members: oneMember(only.ext, decodeMember(entry, only, span, ctx, crc)) };
  }
  return decodeSpan(entry, span, ctx, crc);
}

/**
 * The sample of leaf record `slot` from its span, decoded from the leaf's columns (see LeafPage.rows): no entry or
 * member objects touched. `firstCrc`: the CRC32C of the first member's stored bytes when the read computed it.
 * Undefined when a member fails to decompress or verify: the caller then decodes the entry (decodeSpan), which
 * throws the error that names dataset, shard, key and offset.
 */
export function decodeRecord(leaf: LeafPage, slot: number, span: Uint8Array, verify: boolean, crc32c: (bytes: Uint8Array) => number, firstCrc: number | undefined): Sample | undefined {
  const rows = leaf.rows;
  const cols = leaf.memberRows;
  const r = slot * RECORD_COLUMNS;
  const key = leaf.keys[slot] as string;
  const loneCrc = rows[r + RecordColumn.loneCrc32c] as number;
  if (loneCrc >= 0) {
    if (verify && (firstCrc ?? crc32c(span)) !== loneCrc) return undefined;
    return { key, members: oneMember(leaf.exts[rows[r + RecordColumn.loneExt] as number] as string, span) };
  }
  const count = rows[r + RecordColumn.memberCount] as number;
  let q = (rows[r + RecordColumn.firstMember] as number) * MEMBER_COLUMNS;
  const members: Record<string, Uint8Array> = {};
  for (let m = 0; m < count; m++, q += MEMBER_COLUMNS) {
    const start = cols[q + MemberColumn.offset] as number;
    let bytes = span.subarray(start, start + (cols[q + MemberColumn.storedSize] as number));
    const plain = cols[q + MemberColumn.codec] === Codec.none;
    if (!plain) {
      try {
        bytes = lz4DecompressMember(bytes, cols[q + MemberColumn.size] as number, '');
      } catch {
        return undefined;
      }
    }
    if (verify && ((m === 0 && plain ? firstCrc : undefined) ?? crc32c(bytes)) !== cols[q + MemberColumn.crc32c]) return undefined;
    setMember(members, leaf.exts[cols[q + MemberColumn.ext] as number] as string, bytes);
  }
  return { key, members };
}

/**
 * The members object of a one-member sample. Not a literal with a computed key (`{ [ext]: bytes }`): V8 defines
 * that through a runtime call, ~0.25 us a sample when `ext` was decoded from a page (not an internalized string),
 * against ~0.02 us for this keyed store (20,000 samples of 1-10 KiB: atSync took ~3.3 us a sample).
 */
function oneMember(ext: string, bytes: Uint8Array): Record<string, Uint8Array> {
  const members: Record<string, Uint8Array> = {};
  if (ext === '__proto__') setMember(members, ext, bytes);
  else members[ext] = bytes; // a store of its own: setMember's, shared with every members shape, is megamorphic
  return members;
}

/**
 * One member from its stored bytes: decompressed when LZ4 (a fresh buffer), else `stored` itself; verified with
 * `ctx.verify`. `storedCrc32c` is the CRC32C of `stored` when the caller has it (used for uncompressed members).
 */
export function decodeMember(entry: IndexEntry, m: MemberEntry, stored: Uint8Array, ctx: DecodeContext, storedCrc32c?: number): Uint8Array {
  const bytes = m.codec === Codec.lz4 ? decompress(entry, m, stored, ctx) : stored;
  if (!ctx.verify) return bytes;
  const crc = storedCrc32c !== undefined && m.codec === Codec.none ? storedCrc32c : ctx.crc32c(bytes);
  if (crc !== m.crc32c) {
    ctx.onDamage?.();
    throw new ShardkitError(ErrorCodes.CHECKSUM, `${where(entry, m, ctx)}: checksum mismatch, the stored bytes are damaged; run \`shardkit verify\``, details(entry, m, ctx));
  }
  return bytes;
}

/** LZ4 damage carries the same details as a checksum error: which dataset, shard, sample and offset. */
function decompress(entry: IndexEntry, m: MemberEntry, stored: Uint8Array, ctx: DecodeContext): Uint8Array {
  try {
    return lz4DecompressMember(stored, m.size, () => where(entry, m, ctx));
  } catch (err) {
    ctx.onDamage?.();
    if (err instanceof ShardkitError) throw new ShardkitError(err.code, err.message, { ...details(entry, m, ctx), cause: err.cause });
    throw err;
  }
}

/** Built only when something failed: the hot path makes no strings. */
function where(entry: IndexEntry, m: MemberEntry, ctx: DecodeContext): string {
  return `${ctx.dataset}: sample "${entry.key}" member "${m.ext}" (shard ${ctx.shard}, offset ${entry.offset + m.offset})`;
}

function details(entry: IndexEntry, m: MemberEntry, ctx: DecodeContext): { file: string; shard: string; key: string; offset: number } {
  return { file: ctx.dataset, shard: ctx.shard, key: entry.key, offset: entry.offset + m.offset };
}
