/**
 * POSIX tar (ustar) headers, with a pax extended header only when a field does not fit: a path that cannot be
 * split into ustar's 155-byte prefix and 100-byte name, or a size of 8 GiB or more. Encoding is pure and fixed
 * (mode 0644, uid/gid 0, mtime 0, empty user/group names) so the same members give the same bytes.
 * Field offsets follow formats/SPEC.md ("Tar layout").
 */
import { utf8Decoder, utf8Bytes } from './bytes.js';
import { ErrorCodes, ShardkitError } from './errors.js';

export const TAR_BLOCK = 512;
/** Two zero blocks end an archive. */
export const TAR_END_BYTES = 2 * TAR_BLOCK;

// ustar header fields: [offset, length]
export const F_NAME = [0, 100] as const;
export const F_MODE = [100, 8] as const;
export const F_UID = [108, 8] as const;
export const F_GID = [116, 8] as const;
export const F_SIZE = [124, 12] as const;
export const F_MTIME = [136, 12] as const;
export const F_CHKSUM = [148, 8] as const;
export const F_TYPEFLAG = [156, 1] as const;
export const F_LINKNAME = [157, 100] as const;
export const F_MAGIC = [257, 6] as const;
export const F_VERSION = [263, 2] as const;
export const F_UNAME = [265, 32] as const;
export const F_GNAME = [297, 32] as const;
export const F_DEVMAJOR = [329, 8] as const;
export const F_DEVMINOR = [337, 8] as const;
export const F_PREFIX = [345, 155] as const;

/** Largest size an 11-digit octal field holds (8 GiB - 1). */
export const USTAR_MAX_SIZE = 0o77777777777;
export const PAX_HEADER_NAME = '././@PaxHeader';
const FILE_MODE = 0o644;
const USTAR_MAGIC = utf8Bytes('ustar\0');
const USTAR_VERSION = utf8Bytes('00');

export const TarType = {
  file: '0',
  oldFile: '\0',
  hardLink: '1',
  symlink: '2',
  charDevice: '3',
  blockDevice: '4',
  directory: '5',
  fifo: '6',
  contiguous: '7',
  paxExtended: 'x',
  paxGlobal: 'g',
  gnuLongName: 'L',
  gnuLongLink: 'K',
  /** Old GNU sparse file: its header's map may continue in extension blocks before the data. */
  gnuSparse: 'S',
} as const;

/** Bytes after `size` data bytes up to the next block boundary. */
export function tarPadding(size: number): number {
  const rem = size % TAR_BLOCK;
  return rem === 0 ? 0 : TAR_BLOCK - rem;
}

function writeOctal(block: Uint8Array, [off, len]: readonly [number, number], value: number): void {
  let v = value;
  for (let i = len - 2; i >= 0; i--) {
    block[off + i] = 0x30 + (v % 8);
    v = Math.floor(v / 8);
  }
  if (v !== 0) throw new RangeError(`value ${value} does not fit a ${len}-byte octal field`);
  block[off + len - 1] = 0;
}

function writeBytes(block: Uint8Array, [off, len]: readonly [number, number], bytes: Uint8Array): void {
  block.set(bytes.subarray(0, len), off);
}

/** Sum of the header bytes with the checksum field read as spaces. */
export function headerChecksum(block: Uint8Array): number {
  if ((block.byteOffset & 3) === 0 && block.length >= TAR_BLOCK) return alignedHeaderChecksum(new Uint32Array(block.buffer, block.byteOffset, TAR_BLOCK / 4));
  let sum = 8 * 0x20;
  for (let i = 0; i < F_CHKSUM[0]; i++) sum += block[i] as number;
  for (let i = F_CHKSUM[0] + F_CHKSUM[1]; i < TAR_BLOCK; i++) sum += block[i] as number;
  return sum;
}

/** The checksum field's two words in a header read as 128 uint32 (bytes 148-155). */
const CHKSUM_WORD = F_CHKSUM[0] / 4;

/**
 * headerChecksum four bytes a step: each word's bytes added in two 16-bit lanes (bytes 0 and 2, bytes 1 and 3). A
 * lane gets at most 2 x 255 a word, 64,260 over the 126 words: no carry reaches the other lane. The scanner of a
 * verify checks a header per sample, mostly before V8 has optimized it: a quarter of the steps is what counts there.
 */
function alignedHeaderChecksum(words: Uint32Array): number {
  let lanes = 0;
  for (let i = 0; i < TAR_BLOCK / 4; i++) {
    if (i === CHKSUM_WORD || i === CHKSUM_WORD + 1) continue;
    const w = words[i] as number;
    lanes = (lanes + (w & 0x00ff00ff) + ((w >>> 8) & 0x00ff00ff)) | 0;
  }
  return 8 * 0x20 + (lanes & 0xffff) + (lanes >>> 16);
}

/** The fields every header we write shares (mode, ids, mtime, magic, version, devices), filled once. */
const HEADER_TEMPLATE = ((): Uint8Array => {
  const block = new Uint8Array(TAR_BLOCK);
  writeOctal(block, F_MODE, FILE_MODE);
  writeOctal(block, F_UID, 0);
  writeOctal(block, F_GID, 0);
  writeOctal(block, F_MTIME, 0);
  writeBytes(block, F_MAGIC, USTAR_MAGIC);
  writeBytes(block, F_VERSION, USTAR_VERSION);
  writeOctal(block, F_DEVMAJOR, 0);
  writeOctal(block, F_DEVMINOR, 0);
  return block;
})();

/**
 * A copy of the header block every regular file's header starts from, for the native reader
 * (src/native/read-file.c), which fills in name, size, type and checksum as {@link encodeShortFileHeaderInto} does.
 */
export function fileHeaderTemplate(): Uint8Array {
  return HEADER_TEMPLATE.slice();
}

/** Sum of the template's bytes, its checksum field counted as spaces: the fields ustarBlock fills start as zeros. */
const TEMPLATE_SUM = headerChecksum(HEADER_TEMPLATE);

function ustarBlock(nameField: Uint8Array, prefixField: Uint8Array, size: number, type: string): Uint8Array {
  const block = HEADER_TEMPLATE.slice();
  writeBytes(block, F_NAME, nameField);
  writeBytes(block, F_PREFIX, prefixField);
  writeOctal(block, F_SIZE, size);
  block[F_TYPEFLAG[0]] = type.charCodeAt(0);
  // the checksum adds what was written to the template's sum (instead of summing all 512 bytes again)
  let sum = TEMPLATE_SUM + (block[F_TYPEFLAG[0]] as number);
  for (let i = 0, n = Math.min(nameField.length, F_NAME[1]); i < n; i++) sum += nameField[i] as number;
  for (let i = 0, n = Math.min(prefixField.length, F_PREFIX[1]); i < n; i++) sum += prefixField[i] as number;
  for (let i = 0; i < F_SIZE[1]; i++) sum += block[F_SIZE[0] + i] as number;
  for (let i = 5, v = sum; i >= 0; i--, v >>>= 3) block[F_CHKSUM[0] + i] = 0x30 + (v & 7);
  block[F_CHKSUM[0] + 6] = 0;
  block[F_CHKSUM[0] + 7] = 0x20;
  return block;
}

/** Splits a path into ustar prefix and name fields, or undefined when it cannot be split. */
function splitUstarPath(path: Uint8Array): { prefix: Uint8Array; name: Uint8Array } | undefined {
  if (path.length <= F_NAME[1]) return { prefix: new Uint8Array(0), name: path };
  for (let i = Math.min(path.length - 1, F_PREFIX[1]); i > 0; i--) {
    if (path[i] !== 0x2f) continue;
    const name = path.subarray(i + 1);
    if (name.length === 0 || name.length > F_NAME[1]) return undefined;
    return { prefix: path.subarray(0, i), name };
  }
  return undefined;
}

/** One pax record: "<len> <key>=<value>\n", where <len> counts the whole record including its own digits. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = utf8Bytes(body).length;
  let len = bodyBytes + 1;
  while (String(len).length + bodyBytes !== len) len = String(len).length + bodyBytes;
  return `${len}${body}`;
}

const pathEncoder = new TextEncoder();
const TYPE_FILE = TarType.file.charCodeAt(0);

/**
 * Writes the ustar header of a regular file at `target[offset..offset+512)` without allocating, when a single
 * ustar block holds it: a path of at most 100 UTF-8 bytes without NUL and a size below 8 GiB (the common case).
 * Returns false otherwise, leaving the bytes there undefined; {@link encodeFileHeader} handles every case.
 */
export function encodeShortFileHeaderInto(target: Uint8Array, offset: number, path: string, size: number): boolean {
  if (path.length === 0 || path.length > F_NAME[1] || !Number.isSafeInteger(size) || size < 0 || size > USTAR_MAX_SIZE) return false;
  target.set(HEADER_TEMPLATE, offset);
  const { read, written } = pathEncoder.encodeInto(path, target.subarray(offset, offset + F_NAME[1]));
  if (read !== path.length) return false;
  let sum = TEMPLATE_SUM + TYPE_FILE;
  for (let i = offset, end = offset + written; i < end; i++) {
    const c = target[i] as number;
    if (c === 0) return false;
    sum += c;
  }
  // 11 octal digits and a NUL, as writeOctal
  const sizeAt = offset + F_SIZE[0];
  let v = size;
  for (let i = F_SIZE[1] - 2; i >= 0; i--) {
    const digit = 0x30 + (v % 8);
    target[sizeAt + i] = digit;
    sum += digit;
    v = Math.floor(v / 8);
  }
  target[sizeAt + F_SIZE[1] - 1] = 0;
  target[offset + F_TYPEFLAG[0]] = TYPE_FILE;
  for (let i = 5, c = sum; i >= 0; i--, c >>>= 3) target[offset + F_CHKSUM[0] + i] = 0x30 + (c & 7);
  target[offset + F_CHKSUM[0] + 6] = 0;
  target[offset + F_CHKSUM[0] + 7] = 0x20;
  return true;
}

/**
 * The header blocks that precede a regular file's data: one ustar block, preceded by a pax header and its data
 * blocks when the path or size does not fit ustar. The file data follows, padded with {@link tarPadding}.
 */
export function encodeFileHeader(path: string, size: number): Uint8Array {
  const block = new Uint8Array(TAR_BLOCK);
  if (encodeShortFileHeaderInto(block, 0, path, size)) return block;
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`invalid member size ${size}`);
  const pathBytes = utf8Bytes(path);
  if (pathBytes.length === 0 || pathBytes.includes(0)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `invalid member name ${JSON.stringify(path)}`);
  const split = splitUstarPath(pathBytes);
  const bigSize = size > USTAR_MAX_SIZE;
  // An unsplittable path keeps a truncated copy in ustar for old readers; the pax `path` is authoritative.
  const mainBlock = ustarBlock(split?.name ?? truncateUtf8(pathBytes, F_NAME[1]), split?.prefix ?? new Uint8Array(0), bigSize ? 0 : size, TarType.file);
  let records = '';
  if (split === undefined) records += paxRecord('path', path);
  if (bigSize) records += paxRecord('size', String(size));
  if (records === '') return mainBlock;
  const data = utf8Bytes(records);
  const pax = ustarBlock(utf8Bytes(PAX_HEADER_NAME), new Uint8Array(0), data.length, TarType.paxExtended);
  const out = new Uint8Array(TAR_BLOCK + data.length + tarPadding(data.length) + TAR_BLOCK);
  out.set(pax, 0);
  out.set(data, TAR_BLOCK);
  out.set(mainBlock, out.length - TAR_BLOCK);
  return out;
}

/** The longest prefix of `bytes` of at most `max` bytes that ends on a UTF-8 character boundary. */
function truncateUtf8(bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.length <= max) return bytes;
  let end = max;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

export interface TarHeader {
  /** Path from the name (and prefix) fields; pax `path` and GNU long names are applied by the scanner. */
  name: string;
  /** True when the name bytes are valid UTF-8 (`name` is then their text; else each byte is one Latin-1 character). */
  nameIsUtf8: boolean;
  /** The raw name bytes, for names that are not UTF-8. */
  nameBytes: Uint8Array;
  size: number;
  type: string;
  linkname: string;
  mode: number;
  mtime: number;
  /** 'ustar' (POSIX), 'gnu' (GNU tar's old magic) or 'v7' (none). */
  format: 'ustar' | 'gnu' | 'v7';
}

function fieldEnd(block: Uint8Array, off: number, len: number): number {
  let end = off;
  while (end < off + len && block[end] !== 0) end++;
  return end;
}

/**
 * Parses a numeric field as Python's tarfile does (WebDataset reads tars with it): GNU's base-256 when the high bit
 * is set; else octal digits in the text before the first NUL, with white space around them, an empty field being 0.
 * NaN when malformed. (GNU tar differs only on a field that starts with one NUL and has digits after it: it skips the
 * NUL and reads them; tarfile reads 0, and so do we, so both see the same members.)
 */
export function parseNumericField(block: Uint8Array, [off, len]: readonly [number, number]): number {
  const first = block[off] as number;
  if (first & 0x80) {
    if (first === 0xff) return Number.NaN; // negative base-256
    let v = first & 0x7f;
    for (let i = 1; i < len; i++) v = v * 256 + (block[off + i] as number);
    return Number.isSafeInteger(v) ? v : Number.NaN;
  }
  let end = off;
  while (end < off + len && block[end] !== 0) end++;
  let i = off;
  while (i < end && isSpace(block[i] as number)) i++;
  while (end > i && isSpace(block[end - 1] as number)) end--;
  let v = 0;
  for (; i < end; i++) {
    const c = block[i] as number;
    if (c < 0x30 || c > 0x37) return Number.NaN;
    v = v * 8 + (c - 0x30);
  }
  return v;
}

/** What Python's str.strip() removes, in ASCII: tab to carriage return, the file/group/record/unit separators, space. */
function isSpace(c: number): boolean {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20);
}

/** True when the block is all zeros (end of archive). */
export function isZeroBlock(block: Uint8Array): boolean {
  for (let i = 0; i < TAR_BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

/** The name's text: UTF-8 when it is valid UTF-8 (`utf8` true), else Latin-1 (every byte one character). */
function decodeName(bytes: Uint8Array): { text: string; utf8: boolean } {
  try {
    return { text: utf8Decoder.decode(bytes), utf8: true };
  } catch {
    return { text: new TextDecoder('latin1').decode(bytes), utf8: false };
  }
}

/** The historical signed checksum: header bytes read as signed, the checksum field as spaces. */
function signedHeaderChecksum(block: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i++) sum += i >= F_CHKSUM[0] && i < F_CHKSUM[0] + F_CHKSUM[1] ? 0x20 : ((block[i] as number) << 24) >> 24;
  return sum;
}

/** True when block[at, at + text.length) holds the ASCII `text`. */
function hasAscii(block: Uint8Array, at: number, text: string): boolean {
  for (let i = 0; i < text.length; i++) if (block[at + i] !== text.charCodeAt(i)) return false;
  return true;
}

/**
 * Decodes one header block. Returns undefined for a zero block; throws CORRUPT_SHARD when the checksum or a
 * numeric field is wrong. Accepts the unsigned and the historical signed checksum. Errors start with `where`, and
 * ` (header at byte N)` when `headerOffset` is given (a scanner decodes thousands of headers and names one rarely).
 */
export function decodeTarHeader(block: Uint8Array, where: string, headerOffset?: number): TarHeader | undefined {
  const at = (): string => (headerOffset === undefined ? where : `${where} (header at byte ${headerOffset})`);
  if (block.length < TAR_BLOCK) throw new ShardkitError(ErrorCodes.TRUNCATED, `${at()}: tar header cut short`);
  if (isZeroBlock(block)) return undefined;
  const stored = parseNumericField(block, F_CHKSUM);
  // the signed sum only when the unsigned one (what every writer since POSIX.1-1988 stores) does not match
  if (stored !== headerChecksum(block) && stored !== signedHeaderChecksum(block)) throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${at()}: tar header checksum mismatch`);
  const size = parseNumericField(block, F_SIZE);
  const mode = parseNumericField(block, F_MODE);
  const mtime = parseNumericField(block, F_MTIME);
  if (Number.isNaN(size) || Number.isNaN(mode)) throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${at()}: tar header has a malformed number`);
  // compared as bytes: a hostile header may hold anything there, including invalid UTF-8
  const format = hasAscii(block, F_MAGIC[0], 'ustar\0') ? 'ustar' : hasAscii(block, F_MAGIC[0], 'ustar ') && hasAscii(block, F_VERSION[0], ' \0') ? 'gnu' : 'v7';
  const nameBytes0 = block.subarray(F_NAME[0], fieldEnd(block, F_NAME[0], F_NAME[1]));
  let nameBytes: Uint8Array = nameBytes0;
  if (format === 'ustar') {
    const prefix = block.subarray(F_PREFIX[0], fieldEnd(block, F_PREFIX[0], F_PREFIX[1]));
    if (prefix.length > 0) {
      nameBytes = new Uint8Array(prefix.length + 1 + nameBytes0.length);
      nameBytes.set(prefix, 0);
      nameBytes[prefix.length] = 0x2f;
      nameBytes.set(nameBytes0, prefix.length + 1);
    }
  }
  let type = String.fromCharCode(block[F_TYPEFLAG[0]] as number);
  // v7's directory: an old-style file (type NUL) whose name field ends in '/'. Python's tarfile (WebDataset's reader)
  // takes it so, and then reads no data after it, whatever its size says; GNU tar skips the size. We follow tarfile.
  if (type === TarType.oldFile && nameBytes0[nameBytes0.length - 1] === 0x2f) type = TarType.directory;
  const name = decodeName(nameBytes);
  const linkEnd = fieldEnd(block, F_LINKNAME[0], F_LINKNAME[1]);
  return {
    name: name.text,
    nameIsUtf8: name.utf8,
    nameBytes: nameBytes === nameBytes0 ? nameBytes0.slice() : nameBytes,
    size,
    type,
    linkname: linkEnd === F_LINKNAME[0] ? '' : decodeName(block.subarray(F_LINKNAME[0], linkEnd)).text,
    mode,
    mtime: Number.isNaN(mtime) ? 0 : mtime,
    format,
  };
}

/** Parses pax records; malformed records throw CORRUPT_SHARD. */
export function parsePaxRecords(data: Uint8Array, where: string): Map<string, string> {
  const out = new Map<string, string>();
  let pos = 0;
  while (pos < data.length) {
    if (data[pos] === 0) break; // trailing NUL padding some writers leave
    let sp = pos;
    while (sp < data.length && data[sp] !== 0x20) sp++;
    const len = Number(String.fromCharCode(...data.subarray(pos, Math.min(sp, pos + 20))));
    if (!Number.isInteger(len) || len <= sp - pos + 1 || pos + len > data.length || data[pos + len - 1] !== 0x0a) {
      throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${where}: malformed pax record at byte ${pos}`);
    }
    const record = data.subarray(sp + 1, pos + len - 1);
    const eq = record.indexOf(0x3d);
    if (eq < 0) throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${where}: pax record without '='`);
    out.set(decodeName(record.subarray(0, eq)).text, decodeName(record.subarray(eq + 1)).text);
    pos += len;
  }
  return out;
}
