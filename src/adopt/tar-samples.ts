/**
 * Turns the entries a {@link TarScanner} reports into index entries: members that share a key and follow each other
 * form one sample (as WebDataset groups them), each member's CRC32C computed from its data as it streams past.
 * A sample's span runs from its first member's data to its last member's data end: headers and skipped entries in
 * between are read along, and one read still fetches the whole sample.
 */
import { utf8Bytes } from '../../formats/bytes.js';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import { LZ4_FRAME_MAGIC, lz4CompressMember, lz4DecompressFrame } from '../../formats/lz4.js';
import { LZ4_NAME_SUFFIX } from '../../formats/sample-layout.js';
import type { TarEntry, TarScanHandler } from '../../formats/tar-scan.js';
import { classifyEntry, type MemberRuleOptions } from './member-rules.js';

export interface TarSampleOptions extends MemberRuleOptions {
  /** Shard number the entries get. */
  shard: number;
  /** Shard file name, used in `skipped` paths (`<shard>:<member name>`). */
  shardFile: string;
  /**
   * Whether a member named `*.lz4` may be one the writer compressed ('detect': yes when its bytes are exactly what
   * the writer makes of their decompression; 'no': always a member whose extension ends in `lz4`).
   */
  lz4: 'no' | 'detect';
  /** Keys longer than this (UTF-8 bytes) do not fit an index page: their members are skipped. */
  maxKeyBytes: number;
  /** Members buffered for LZ4 detection larger than this fail with TOO_LARGE. */
  maxMemberBytes: number;
  onSample(entry: IndexEntry): void;
  onSkip(path: string, reason: string): void;
}

interface Group {
  key: string;
  spanStart: number;
  members: MemberEntry[];
  exts: Set<string>;
}

interface OpenMember {
  key: string;
  name: string;
  ext: string;
  crc: number;
  /** Data kept for LZ4 detection. */
  chunks: Uint8Array[] | undefined;
}

export class TarSampleCollector implements TarScanHandler {
  private group: Group | undefined;
  private member: OpenMember | undefined;
  /** Samples reported so far. */
  samples = 0;
  /** Members whose bytes the writer had LZ4-compressed (reindex). */
  compressedMembers = 0;

  constructor(private readonly o: TarSampleOptions) {}

  onEntry(entry: TarEntry): void {
    this.member = undefined;
    const decision = classifyEntry(entry, this.o);
    const shown = `${this.o.shardFile}:${entry.name ?? new TextDecoder('latin1').decode(entry.nameBytes)}`;
    if ('skip' in decision) {
      this.o.onSkip(shown, decision.skip);
      return;
    }
    if (utf8Bytes(decision.key).length > this.o.maxKeyBytes) {
      this.o.onSkip(shown, `key longer than ${this.o.maxKeyBytes} bytes (the index page limit)`);
      return;
    }
    const candidate = this.o.lz4 === 'detect' && decision.name.endsWith(LZ4_NAME_SUFFIX);
    if (candidate && entry.size > this.o.maxMemberBytes) {
      throw new ShardkitError(ErrorCodes.TOO_LARGE, `${shown}: member is ${entry.size} bytes, over maxMemberBytes ${this.o.maxMemberBytes}`, { file: this.o.shardFile });
    }
    if (this.group !== undefined && this.group.key !== decision.key) this.flush();
    this.group ??= { key: decision.key, spanStart: entry.dataOffset, members: [], exts: new Set() };
    this.member = { key: decision.key, name: decision.name, ext: decision.ext, crc: 0, chunks: candidate ? [] : undefined };
  }

  onData(_entry: TarEntry, piece: Uint8Array): void {
    const m = this.member;
    if (m === undefined) return;
    if (m.chunks !== undefined) m.chunks.push(piece.slice());
    else m.crc = crc32c(piece, m.crc);
  }

  onEntryEnd(entry: TarEntry): void {
    const m = this.member;
    this.member = undefined;
    const group = this.group;
    if (m === undefined || group === undefined) return;
    let { ext, crc } = m;
    let size = entry.size;
    let codec: MemberEntry['codec'] = Codec.none;
    if (m.chunks !== undefined) {
      const stored = concat(m.chunks, entry.size);
      const original = writerCompressed(stored, this.o.maxMemberBytes, m.name.slice(0, -LZ4_NAME_SUFFIX.length).endsWith(LZ4_NAME_SUFFIX));
      if (original !== undefined) {
        codec = Codec.lz4;
        size = original.length;
        crc = crc32c(original);
        const name = m.name.slice(0, -LZ4_NAME_SUFFIX.length);
        ext = name.length > m.key.length ? name.slice(m.key.length + 1) : '';
        this.compressedMembers++;
      } else {
        crc = crc32c(stored);
      }
    }
    if (group.exts.has(ext)) {
      this.o.onSkip(`${this.o.shardFile}:${m.name}`, `duplicate member: sample "${m.key}" already has a "${ext}" member`);
      return;
    }
    group.exts.add(ext);
    group.members.push({ ext, offset: entry.dataOffset - group.spanStart, size, storedSize: entry.size, codec, crc32c: crc });
  }

  /** Reports the last sample: call after the archive's last byte. */
  finish(): void {
    this.flush();
  }

  private flush(): void {
    const g = this.group;
    this.group = undefined;
    if (g === undefined || g.members.length === 0) return;
    const last = g.members[g.members.length - 1] as MemberEntry;
    this.samples++;
    this.o.onSample({ key: g.key, shard: this.o.shard, offset: g.spanStart, length: last.offset + last.storedSize, members: g.members });
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(total);
  let pos = 0;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.length;
  }
  return out;
}

/** BD byte bits 4-6 -> maximum block size (LZ4 frame format). */
const BLOCK_MAX_BYTES: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };

/** Upper bound of a frame's content size (blocks x block maximum), or undefined when it is not a valid frame. */
function lz4ContentBound(frame: Uint8Array): number | undefined {
  const v = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (frame.length < 7 || v.getUint32(0, true) !== LZ4_FRAME_MAGIC) return undefined;
  const flg = frame[4] as number;
  const blockMax = BLOCK_MAX_BYTES[((frame[5] as number) >> 4) & 7];
  if (blockMax === undefined || flg >> 6 !== 1) return undefined;
  let pos = 7 + (flg & 0x08 ? 8 : 0);
  let blocks = 0;
  for (;;) {
    if (pos + 4 > frame.length) return undefined;
    const word = v.getUint32(pos, true);
    pos += 4;
    if (word === 0) return blocks * blockMax;
    pos += (word & 0x7fffffff) + (flg & 0x10 ? 4 : 0);
    blocks++;
  }
}

/**
 * The member's original bytes when `stored` is exactly what the writer makes of them (an LZ4 frame that
 * re-compresses to itself and is shorter than its content, or of any length when the name without `.lz4` still
 * ends in `.lz4`: the writer frames such members again), else undefined: a member that merely ends in `.lz4`.
 */
function writerCompressed(stored: Uint8Array, maxMemberBytes: number, framedAgain: boolean): Uint8Array | undefined {
  const bound = lz4ContentBound(stored);
  // the bound keeps a hostile frame from expanding beyond what a member may be
  if (bound === undefined || bound > maxMemberBytes + (4 << 20)) return undefined;
  let original: Uint8Array;
  try {
    original = lz4DecompressFrame(stored);
  } catch {
    return undefined;
  }
  if ((original.length <= stored.length && !framedAgain) || original.length > maxMemberBytes) return undefined;
  const again = lz4CompressMember(original);
  return Buffer.from(again.buffer, again.byteOffset, again.byteLength).equals(Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength)) ? original : undefined;
}
