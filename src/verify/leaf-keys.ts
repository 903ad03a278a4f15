/**
 * The first and last keys of the leaf a LeafScan read last, kept as bytes (the walk compares them with the
 * leaves around it and makes no string unless asked), and the writer's key rules on a key's UTF-8 bytes.
 */

import { utf8Bytes } from '../../formats/bytes.js';

const SLASH = 0x2f;
const DOT = 0x2e;
const BACKSLASH = 0x5c;

export class LeafKeys {
  /**
   * The first and last keys of the leaf, as UTF-8 (the scan takes no other) in `firstKeyBytes[0,
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
    return keyText(this.firstKeyBytes, this.firstKeyLength);
  }

  /** The leaf's last key (a string made on each call). */
  get lastKey(): string {
    return keyText(this.lastKeyBytes, this.lastKeyLength);
  }

  /** Whether the leaf's first key is `key`, without making a string. */
  firstKeyIs(key: string): boolean {
    const n = this.firstKeyLength;
    const bytes = this.firstKeyBytes;
    if (key.length === n) {
      // an ASCII key is its bytes; a key past ASCII has more bytes than UTF-16 units, so it is not this one
      for (let i = 0; i < n; i++) {
        const c = key.charCodeAt(i);
        if (c !== bytes[i] || c >= 0x80) return false;
      }
      return true;
    }
    return key.length < n && Buffer.from(bytes.buffer, bytes.byteOffset, n).equals(utf8Bytes(key));
  }

  /**
   * Whether the leaf's first key comes after the key whose UTF-8 is `prev[0, prevLength)` (UTF-8 byte order is
   * compareKeys' order, see key-order.ts).
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
 * checkKeyAndExts' key rules and UTF-8, checked key by key over a leaf's prefix-compressed keys (a key is the one
 * before cut to `shared` bytes, then new bytes): only the new bytes, as the rest passed with the key before.
 */
export class KeyRules {
  /** Where the last path segment of the key before starts: the bytes before it were checked with that key. */
  private lastSegment = 0;
  /** The key before holds a character past ASCII. */
  private wide = false;

  /** Before a leaf's first key. */
  reset(): void {
    this.lastSegment = 0;
    this.wide = false;
  }

  /**
   * Copies the new bytes page[pos, pos + length) into `key` from `shared` (the room is the caller's); false when the
   * key breaks a rule or is not UTF-8.
   */
  next(page: Uint8Array, pos: number, key: Uint8Array, shared: number, length: number): boolean {
    // the segment the prefix cuts starts after its last "/" (the key before had none after lastSegment: when that is
    // inside the prefix, it is where the cut segment starts)
    let segment = Math.min(this.lastSegment, shared);
    while (segment > 0 && key[segment - 1] !== SLASH) segment--;
    let high = false; // a new byte past ASCII
    const end = shared + length;
    for (let j = shared; j < end; j++) {
      const b = page[pos++] as number;
      if (b >= 0x80) high = true;
      else if (b === 0 || b === BACKSLASH) return false;
      key[j] = b;
      if (b === SLASH) {
        if (badSegment(key, segment, j)) return false;
        segment = j + 1;
      }
    }
    if (badSegment(key, segment, end)) return false;
    // a key past ASCII, or one sharing a prefix with such a key (which may cut a character), is checked whole
    if (high || this.wide) {
      const w = utf8Key(key, end);
      if (w < 0) return false;
      this.wide = w === 1;
    }
    this.lastSegment = segment;
    return true;
  }
}

/**
 * checkKeyAndExts' key rules on a key's UTF-8 (`key[0, length)`): not empty, no NUL or backslash, no empty, "." or
 * ".." path segment. (Whether the bytes are UTF-8 is {@link utf8Key}'s to say.)
 */
export function safeKeyBytes(key: Uint8Array, length: number): boolean {
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

/**
 * `key[0, n)` as the fatal UTF-8 decoder keys are read with (formats/bytes.ts utf8Decoder) takes it: 1 when it holds
 * a character past ASCII, 0 when it is ASCII, -1 when it is not UTF-8 (an overlong form, a surrogate, past U+10FFFF,
 * a sequence cut short): decodePage then refuses the page, and names what is wrong. As utf8_key in verify-scan.c.
 */
export function utf8Key(key: Uint8Array, n: number): number {
  let wide = 0;
  let i = 0;
  while (i < n) {
    const b = key[i] as number;
    if (b < 0x80) {
      i++;
      continue;
    }
    wide = 1;
    let more: number;
    let lo = 0x80; // the second byte's range
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) more = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      more = 2;
      if (b === 0xe0) lo = 0xa0; // overlong below
      else if (b === 0xed) hi = 0x9f; // surrogates above
    } else if (b >= 0xf0 && b <= 0xf4) {
      more = 3;
      if (b === 0xf0) lo = 0x90; // overlong below
      else if (b === 0xf4) hi = 0x8f; // past U+10FFFF above
    } else return -1;
    const second = key[i + 1] as number;
    if (n - i <= more || second < lo || second > hi) return -1;
    for (let k = 2; k <= more; k++) if (((key[i + k] as number) & 0xc0) !== 0x80) return -1;
    i += 1 + more;
  }
  return wide;
}

/** A key's text from its UTF-8 (which the scan checked). */
function keyText(bytes: Uint8Array, length: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, length).toString('utf8');
}
