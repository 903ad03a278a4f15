/**
 * Little-endian byte cursors with LEB128 varints, for the index pages and the shard table. Varints carry values
 * up to 2^53 - 1 (JavaScript's exact integers): 64-bit offsets on disk, checked on the way in and out.
 */
import { ErrorCodes, ShardkitError, type ErrorCode } from './errors.js';

export const MAX_VARINT_BYTES = 8; // 8 x 7 bits = 56 bits >= 53

/**
 * UTF-8 bytes of a string. Buffer.from is about 3x faster than TextEncoder.encode for the short strings (keys,
 * names, extensions) that packing encodes several times per sample.
 */
export function utf8Bytes(text: string): Uint8Array {
  return Buffer.from(text, 'utf8');
}
/** Strict UTF-8 that keeps a leading U+FEFF: a key or name may start with one (the default decoder drops it). */
export const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as UTF-8 text (utf8Decoder's rules), or undefined when they are not UTF-8. */
export function utf8OrUndefined(bytes: Uint8Array): string | undefined {
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Appends to a growable buffer. */
export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  length = 0;

  constructor(initialCapacity = 256) {
    this.buf = new Uint8Array(initialCapacity);
    this.view = new DataView(this.buf.buffer);
  }

  private ensure(extra: number): void {
    const need = this.length + extra;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(value: number): this {
    this.ensure(1);
    this.buf[this.length++] = value;
    return this;
  }

  u32(value: number): this {
    this.ensure(4);
    this.view.setUint32(this.length, value >>> 0, true);
    this.length += 4;
    return this;
  }

  u64(value: number): this {
    this.ensure(8);
    writeU64(this.view, this.length, value);
    this.length += 8;
    return this;
  }

  varint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint out of range: ${value}`);
    this.ensure(MAX_VARINT_BYTES);
    while (value >= 0x80) {
      this.buf[this.length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buf[this.length++] = value;
    return this;
  }

  /** Appends `data` from `start` on (no view made for the part). */
  bytes(data: Uint8Array, start = 0): this {
    const n = data.length - start;
    this.ensure(n);
    if (n <= 32) {
      // a key's suffix, typically: a loop beats set()'s call for a few bytes
      const buf = this.buf;
      for (let i = 0; i < n; i++) buf[this.length + i] = data[start + i] as number;
    } else {
      this.buf.set(start === 0 ? data : data.subarray(start), this.length);
    }
    this.length += n;
    return this;
  }

  /** A copy of what was written. */
  toBytes(): Uint8Array {
    return this.buf.slice(0, this.length);
  }

  /** A view of what was written, valid until the next write. */
  view_(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  reset(): void {
    this.length = 0;
  }
}

/** Reads with bounds checks; any overrun is a `code` error about `what` (never a crash or a wrong value). */
export class ByteReader {
  pos: number;
  private readonly view: DataView;

  constructor(
    readonly bytes: Uint8Array,
    readonly code: ErrorCode,
    readonly what: string,
    start = 0,
    readonly end = bytes.length,
  ) {
    this.pos = start;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  fail(reason: string): never {
    throw new ShardkitError(this.code, `${this.what}: ${reason}`);
  }

  private need(n: number): void {
    if (this.pos + n > this.end) this.fail(`record runs past its end at byte ${this.pos}`);
  }

  u8(): number {
    this.need(1);
    return this.bytes[this.pos++] as number;
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  u64(): number {
    this.need(8);
    const v = readU64(this.view, this.pos);
    if (v === undefined) this.fail(`64-bit value at byte ${this.pos} exceeds 2^53`);
    this.pos += 8;
    return v;
  }

  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      const b = this.u8();
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (!Number.isSafeInteger(value)) this.fail(`varint exceeds 2^53 at byte ${this.pos}`);
        return value;
      }
      scale *= 0x80;
    }
    return this.fail(`varint longer than ${MAX_VARINT_BYTES} bytes at byte ${this.pos}`);
  }

  /** Moves past `n` bytes, with bytesView's bounds check and error, without making a view (a hot decoder's bounds check). */
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  bytesView(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  utf8(n: number): string {
    const raw = this.bytesView(n);
    try {
      return utf8Decoder.decode(raw);
    } catch {
      return this.fail(`invalid UTF-8 at byte ${this.pos - n}`);
    }
  }
}

const TWO_32 = 0x1_0000_0000;

export function writeU64(view: DataView, offset: number, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`u64 out of range: ${value}`);
  view.setUint32(offset, value % TWO_32, true);
  view.setUint32(offset + 4, Math.floor(value / TWO_32), true);
}

/** A little-endian u64, or undefined when it exceeds 2^53 - 1. */
export function readU64(view: DataView, offset: number): number | undefined {
  const lo = view.getUint32(offset, true);
  const hi = view.getUint32(offset + 4, true);
  const v = hi * TWO_32 + lo;
  return Number.isSafeInteger(v) ? v : undefined;
}

export function zigzag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

export function unzigzag(n: number): number {
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}

export { ErrorCodes };
