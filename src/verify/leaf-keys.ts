/**
 * The first and last keys of the leaf a LeafScan read last, kept as bytes (the walk compares them with the
 * leaves around it and makes no string unless asked), and the writer's key rules on ASCII key bytes.
 */

const SLASH = 0x2f;
const DOT = 0x2e;
const BACKSLASH = 0x5c;

export class LeafKeys {
  /**
   * The first and last keys of the leaf, as bytes (ASCII: the scan takes no other) in `firstKeyBytes[0,
   * firstKeyLength)` and `lastKeyBytes[0, lastKeyLength)`; {@link firstKey} and {@link lastKey} make strings of them
   * on demand (two strings a page were 5-7% of verify's time on tiny samples, where the walk needs none). A caller
   * may take `lastKeyBytes` and put another buffer in its place (any size: the next scan makes room).
   */
  firstKeyBytes = new Uint8Array(0);
  firstKeyLength = 0;
  lastKeyBytes = new Uint8Array(0);
  lastKeyLength = 0;

  /** The leaf's first key (a string made on each call). */
  get firstKey(): string {
    return ascii(this.firstKeyBytes, this.firstKeyLength);
  }

  /** The leaf's last key (a string made on each call). */
  get lastKey(): string {
    return ascii(this.lastKeyBytes, this.lastKeyLength);
  }

  /** Whether the leaf's first key is `key`, without making a string. */
  firstKeyIs(key: string): boolean {
    const n = this.firstKeyLength;
    if (key.length !== n) return false;
    const bytes = this.firstKeyBytes;
    for (let i = 0; i < n; i++) if (key.charCodeAt(i) !== bytes[i]) return false;
    return true;
  }

  /**
   * Whether the leaf's first key comes after the ASCII key `prev[0, prevLength)` (see key-order.ts: for ASCII keys,
   * byte order is compareKeys' order).
   */
  firstKeyAfter(prev: Uint8Array, prevLength: number): boolean {
    const bytes = this.firstKeyBytes;
    const n = Math.min(prevLength, this.firstKeyLength);
    for (let i = 0; i < n; i++) {
      const a = prev[i] as number;
      const b = bytes[i] as number;
      if (a !== b) return b > a;
    }
    return this.firstKeyLength > prevLength;
  }

  /** Room for the first and last keys of a page of `pageBytes` (a key is shorter than its page). */
  protected keyRoom(pageBytes: number): void {
    if (this.firstKeyBytes.length < pageBytes) this.firstKeyBytes = new Uint8Array(pageBytes);
    if (this.lastKeyBytes.length < pageBytes) this.lastKeyBytes = new Uint8Array(pageBytes);
  }
}

/**
 * checkKeyAndExts' key rules for an ASCII key (`key[0, length)`): not empty, no NUL or backslash, no empty, "." or
 * ".." path segment.
 */
export function safeAsciiKey(key: Uint8Array, length: number): boolean {
  if (length === 0) return false;
  let segment = 0;
  for (let i = 0; i < length; i++) {
    const b = key[i] as number;
    if (b === 0 || b === BACKSLASH) return false;
    if (b === SLASH) {
      if (badSegment(key, segment, i)) return false;
      segment = i + 1;
    }
  }
  return !badSegment(key, segment, length);
}

/** An empty, "." or ".." path segment: `key[start, end)`. */
export function badSegment(key: Uint8Array, start: number, end: number): boolean {
  const n = end - start;
  return n === 0 || (n <= 2 && key[start] === DOT && (n === 1 || key[start + 1] === DOT));
}

function ascii(bytes: Uint8Array, length: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, length).toString('latin1');
}
