/**
 * verify's tar headers read by the addon (src/native/verify-tar.c: runs of plain headers) against TarScanner alone,
 * the reference: on random archives of plain, long-named, pax, GNU, v7, typed, damaged and hostile headers, fed in
 * random chunks, TarHeaderCheck finds the same header (name and size) for every offset and stops on the same damage.
 * Skipped when the addon is not built (verify then reads every header with TarScanner).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IndexEntry } from '../../formats/index-entry.js';
import { F_CHKSUM, F_MAGIC, F_MODE, F_NAME, F_PREFIX, F_SIZE, F_TYPEFLAG, TAR_BLOCK, encodeFileHeader, headerChecksum, tarPadding } from '../../formats/tar-header.js';
import { nativeAddon } from '../../src/native/native.js';
import { TarHeaderCheck } from '../../src/verify/tar-header-check.js';

const native = nativeAddon();

/** How an entry's ustar header is changed after it is made (its checksum made to match again, unless 'badSum'). */
const tweakArb = fc.constantFrom('none', 'none', 'none', 'v7', 'gnuMagic', 'spacedSize', 'base256Size', 'badMode', 'signedSum', 'badSum', 'nulSize');
const pathArb = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom('train', 'été/画像', './a', 'b'), fc.nat(999)).map(([d, i]) => `${d}/${i}.jpg`) },
  { weight: 1, arbitrary: fc.nat(9).map((i) => `${'d'.repeat(60)}/${'e'.repeat(45)}/${i}.png`) }, // a ustar prefix
  { weight: 1, arbitrary: fc.nat(9).map((i) => `${'f'.repeat(150)}${i}.txt`) }, // a pax path
);
const entryArb = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('file' as const), path: pathArb, size: fc.oneof(fc.nat(1500), fc.constantFrom(0, 511, 512, 513)), tweak: tweakArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('gnuLong' as const), path: pathArb, size: fc.nat(700), tweak: fc.constant('none') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('5', '2', '7', 'S', '0/', 'x0'), path: pathArb, size: fc.nat(700), tweak: fc.constant('none') }) },
);
type EntrySpec = { kind: string; path: string; size: number; tweak: string };

function writeText(block: Uint8Array, [off, len]: readonly [number, number], text: string): void {
  block.fill(0, off, off + len);
  block.set(new TextEncoder().encode(text).subarray(0, len), off);
}

function seal(block: Uint8Array, signed = false): void {
  let sum = headerChecksum(block);
  if (signed) for (let i = 0; i < TAR_BLOCK; i++) if (block[i]! >= 0x80 && (i < F_CHKSUM[0] || i >= F_CHKSUM[0] + F_CHKSUM[1])) sum -= 256;
  writeText(block, F_CHKSUM, `${sum.toString(8).padStart(6, '0')}\0 `);
}

/** Data bytes, and the padding after them. */
const dataOf = (size: number, seed: number): Uint8Array => {
  const d = new Uint8Array(size + tarPadding(size));
  for (let i = 0; i < size; i++) d[i] = (seed * 31 + i * 7) & 0xff;
  return d;
};

function encode(spec: EntrySpec, seed: number): Uint8Array[] {
  const { kind, path, size, tweak } = spec;
  if (kind === 'gnuLong') {
    const name = new TextEncoder().encode(`${path}\0`);
    const long = encodeFileHeader('././@LongLink', name.length).slice(0, TAR_BLOCK);
    long[F_TYPEFLAG[0]] = 0x4c; // 'L'
    seal(long);
    const head = encodeFileHeader('short-name', size).slice(-TAR_BLOCK);
    return [long, Uint8Array.from([...name, ...new Uint8Array(tarPadding(name.length))]), head, dataOf(size, seed)];
  }
  const header = encodeFileHeader(path, size).slice();
  const block = header.subarray(header.length - TAR_BLOCK);
  if (kind === 'x0') header[F_TYPEFLAG[0]] = 0x30 + 8; // a pax header whose type byte is damaged ('8')
  if (kind !== 'file' && kind !== 'x0') {
    block[F_TYPEFLAG[0]] = kind === '0/' ? 0 : kind.charCodeAt(0);
    if (kind === '0/') writeText(block, F_NAME, 'some/dir/');
  }
  switch (tweak) {
    case 'v7':
      block.fill(0, F_MAGIC[0], F_MAGIC[0] + 8);
      break;
    case 'gnuMagic':
      writeText(block, [F_MAGIC[0], 8], 'ustar  ');
      block.fill(0x41, F_PREFIX[0], F_PREFIX[0] + 20); // GNU keeps other fields there: not a prefix
      break;
    case 'spacedSize':
      writeText(block, F_SIZE, ` ${size.toString(8)} `);
      break;
    case 'nulSize':
      writeText(block, F_SIZE, `\0${size.toString(8)}`); // read as 0: the data then reads as headers
      break;
    case 'base256Size':
      block.fill(0, F_SIZE[0], F_SIZE[0] + F_SIZE[1]);
      block[F_SIZE[0]] = 0x80;
      block[F_SIZE[0] + 10] = (size >> 8) & 0xff;
      block[F_SIZE[0] + 11] = size & 0xff;
      break;
    case 'badMode':
      writeText(block, F_MODE, '0009');
      break;
    case 'signedSum':
      block[F_PREFIX[0] + 150] = 0xe9; // a byte the signed sum counts as negative
      break;
    default:
  }
  if (tweak === 'badSum') block[F_NAME[0] + 1]! ^= 0x01;
  else seal(block, tweak === 'signedSum');
  if (kind === 'x0') seal(header.subarray(0, TAR_BLOCK));
  return [header, dataOf(size, seed)];
}

function archive(specs: EntrySpec[], end: 'zeros' | 'none' | 'junk'): Uint8Array {
  const parts = specs.flatMap((s, i) => encode(s, i));
  if (end !== 'none') parts.push(new Uint8Array(2 * TAR_BLOCK));
  if (end === 'junk') parts.push(new Uint8Array(TAR_BLOCK).fill(0x55));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What TarHeaderCheck says of every 512-byte boundary (the header whose data starts there, by name and size). */
function findings(tar: Uint8Array, chunks: number[], withAddon: boolean): string[] {
  const check = new TarHeaderCheck('x.tar', withAddon ? native : undefined);
  let at = 0;
  let k = 0;
  while (at < tar.length) {
    const n = Math.min(tar.length - at, chunks[k++ % chunks.length]!);
    check.push(tar.subarray(at, at + n));
    at += n;
  }
  const said: string[] = [`scan: ${check.scanProblem ?? 'ok'}`];
  const entry: IndexEntry = { key: 'k', shard: 0, offset: 0, length: 0, members: [] };
  for (let off = 0; off <= tar.length; off += TAR_BLOCK) check.check(entry, 'bin', -1, off, false, (what) => said.push(`${off}: ${what}`));
  return said;
}

describe.skipIf(native === undefined)('verify tar headers: the addon against TarScanner', () => {
  it('finds the same headers, names and sizes, and the same damage, however the archive is chunked', () => {
    fc.assert(
      fc.property(
        fc.array(entryArb, { minLength: 1, maxLength: 25 }),
        fc.constantFrom('zeros', 'none', 'junk'),
        fc.array(fc.oneof(fc.integer({ min: 1, max: 700 }), fc.integer({ min: 1, max: 20_000 })), { minLength: 1, maxLength: 5 }),
        (specs, end, chunks) => {
          const tar = archive(specs, end as 'zeros' | 'none' | 'junk');
          expect(findings(tar, chunks, true)).toEqual(findings(tar, chunks, false));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('reads plain headers of a whole chunk in one call, and leaves nothing to TarScanner on an intact archive', () => {
    const specs = Array.from({ length: 40 }, (_, i): EntrySpec => ({ kind: 'file', path: `train/${i}.jpg`, size: 100 + i * 37, tweak: 'none' }));
    const tar = archive(specs, 'zeros');
    const rows = new Float64Array(64 * 4);
    const names = new Uint8Array(4096);
    const io = new Float64Array(6);
    native!.verifyTarHeaders(tar, rows, names, io);
    // AT: the end-of-archive block, which TarScanner reads; every header before it is a row
    expect([io[4], io[5], io[2]]).toEqual([tar.length - 2 * TAR_BLOCK, tar.length - 2 * TAR_BLOCK, 40]);
    expect(new TextDecoder().decode(names.subarray(rows[39 * 4 + 2], rows[39 * 4 + 2]! + rows[39 * 4 + 3]!))).toBe('train/39.jpg');
  });

  it('refuses io out of range and arguments of the wrong type, and writes no row past the arrays', () => {
    const tar = archive([{ kind: 'file', path: 'a/b.jpg', size: 10, tweak: 'none' }], 'zeros');
    const io = (from: number, rows = 0, names = 0): Float64Array => Float64Array.from([from, 0, rows, names, 0, 0]);
    expect(() => native!.verifyTarHeaders(tar, new Float64Array(4), new Uint8Array(16), io(tar.length + 1))).toThrow(/out of range/);
    expect(() => native!.verifyTarHeaders(tar, new Float64Array(4), new Uint8Array(16), io(0, 2))).toThrow(/out of range/);
    expect(() => native!.verifyTarHeaders(tar, new Float64Array(4), new Uint8Array(16), io(0.5))).toThrow(/out of range/);
    expect(() => native!.verifyTarHeaders(tar, new Uint8Array(4) as unknown as Float64Array, new Uint8Array(16), io(0))).toThrow(/rows/);
    // no room for a row, or for the name: nothing read
    const full = io(0, 1);
    native!.verifyTarHeaders(tar, new Float64Array(4), new Uint8Array(16), full);
    expect([full[4], full[2]]).toEqual([0, 1]);
    const short = io(0, 0, 10);
    const names = new Uint8Array(16).fill(7);
    native!.verifyTarHeaders(tar, new Float64Array(4), names, short);
    expect([short[4], short[2], [...names]]).toEqual([0, 0, new Array(16).fill(7)]);
  });
});
