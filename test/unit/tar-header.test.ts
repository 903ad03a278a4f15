import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeTarHeader, encodeFileHeader, encodeShortFileHeaderInto, paxRecord, parsePaxRecords, tarPadding, TAR_BLOCK, USTAR_MAX_SIZE } from '../../formats/tar-header.js';

/** A 512-byte block from [offset, ascii] fields, the rest zero. */
function block(fields: [number, string][]): Uint8Array {
  const b = new Uint8Array(TAR_BLOCK);
  for (const [off, text] of fields) b.set(Buffer.from(text, 'latin1'), off);
  return b;
}

/** A one-block ustar header built field by field as SPEC.md describes it (reference for the encoder). */
function referenceHeader(path: string, size: number): Uint8Array {
  const b = block([
    [100, '0000644\0'],
    [108, '0000000\0'],
    [116, '0000000\0'],
    [124, `${size.toString(8).padStart(11, '0')}\0`],
    [136, '00000000000\0'],
    [148, '        '],
    [156, '0'],
    [257, 'ustar\0'],
    [263, '00'],
    [329, '0000000\0'],
    [337, '0000000\0'],
  ]);
  b.set(Buffer.from(path, 'utf8'), 0);
  const sum = b.reduce((a, x) => a + x, 0);
  b.set(Buffer.from(`${sum.toString(8).padStart(6, '0')}\0 `, 'latin1'), 148);
  return b;
}

describe('tar headers', () => {
  it('encodes a ustar header with fixed metadata, byte for byte', () => {
    const expected = block([
      [0, 'a/b.txt'],
      [100, '0000644\0'], // mode
      [108, '0000000\0'], // uid
      [116, '0000000\0'], // gid
      [124, '00000000003\0'], // size
      [136, '00000000000\0'], // mtime 0: output does not depend on when files were touched
      [148, '010400\0 '], // checksum: unsigned sum with this field as spaces, 6 octal digits, NUL, space
      [156, '0'], // regular file
      [257, 'ustar\0'],
      [263, '00'],
      [329, '0000000\0'],
      [337, '0000000\0'],
    ]);
    expect(Buffer.from(encodeFileHeader('a/b.txt', 3)).toString('hex')).toBe(Buffer.from(expected).toString('hex'));
  });

  it('writes short headers in place, byte for byte as the ustar fields say, over dirty memory', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }), fc.integer({ min: 0, max: USTAR_MAX_SIZE }), fc.nat({ max: 64 }), (path, size, offset) => {
        fc.pre(!path.includes('\0') && Buffer.byteLength(path) <= 100);
        const target = new Uint8Array(offset + TAR_BLOCK + 7).fill(0xa5);
        expect(encodeShortFileHeaderInto(target, offset, path, size)).toBe(true);
        const h = target.subarray(offset, offset + TAR_BLOCK);
        expect(Buffer.from(h).equals(Buffer.from(referenceHeader(path, size)))).toBe(true);
        expect(Buffer.from(encodeFileHeader(path, size)).equals(Buffer.from(h))).toBe(true);
        expect(decodeTarHeader(h, 't')).toMatchObject({ name: path, size, type: '0' });
        expect(target[offset + TAR_BLOCK]).toBe(0xa5);
      }),
    );
    const t = new Uint8Array(TAR_BLOCK);
    expect(encodeShortFileHeaderInto(t, 0, 'a', USTAR_MAX_SIZE + 1)).toBe(false);
    expect(encodeShortFileHeaderInto(t, 0, 'x'.repeat(101), 1)).toBe(false);
    expect(encodeShortFileHeaderInto(t, 0, 'é'.repeat(51), 1)).toBe(false); // 102 UTF-8 bytes
    expect(encodeShortFileHeaderInto(t, 0, 'a\0b', 1)).toBe(false);
  });

  it('splits a long path into prefix and name before falling back to pax', () => {
    const dir = 'd'.repeat(120);
    const h = encodeFileHeader(`${dir}/file.jpg`, 10);
    expect(h.length).toBe(TAR_BLOCK);
    expect(Buffer.from(h.subarray(0, 8)).toString()).toBe('file.jpg');
    expect(Buffer.from(h.subarray(345, 345 + 120)).toString()).toBe(dir);
    expect(decodeTarHeader(h, 't')?.name).toBe(`${dir}/file.jpg`);
  });

  it('writes a pax path record when a name cannot be split', () => {
    const name = `${'x'.repeat(150)}.bin`;
    const h = encodeFileHeader(name, 5);
    const pax = decodeTarHeader(h.subarray(0, TAR_BLOCK), 't');
    expect(pax).toMatchObject({ type: 'x', name: '././@PaxHeader' });
    const data = h.subarray(TAR_BLOCK, TAR_BLOCK + (pax?.size ?? 0));
    expect(Buffer.from(data).toString()).toBe(`164 path=${name}\n`);
    expect(parsePaxRecords(data, 't').get('path')).toBe(name);
    expect(h.length).toBe(3 * TAR_BLOCK);
  });

  it('counts its own digits in pax record lengths', () => {
    expect(paxRecord('path', 'a')).toBe('9 path=a\n');
    // 93 bytes of body + 2 digits = 95, but 3 digits would be needed at 100: check the boundary case
    const v = 'v'.repeat(91);
    expect(paxRecord('path', v).length).toBe(Number(paxRecord('path', v).split(' ')[0]));
    expect(Buffer.byteLength(paxRecord('path', 'é'))).toBe(11); // bytes, not characters: "11 path=é\n" is 11 bytes
  });

  it('pads data to whole blocks', () => {
    expect([0, 1, 511, 512, 513].map(tarPadding)).toEqual([0, 511, 1, 0, 511]);
  });

  it('rejects a damaged header checksum', () => {
    const h = encodeFileHeader('a', 1);
    h[0] = 0x62;
    expect(() => decodeTarHeader(h, 'shard.tar')).toThrow(/checksum/);
  });

  it('regression: a magic field that is not UTF-8 is read as v7, not a crash (found by the fuzzer)', () => {
    const h = encodeFileHeader('a/1.cls', 1);
    h.set([222, 175, 0, 19, 143, 0], 257);
    let sum = 8 * 0x20;
    for (let i = 0; i < 512; i++) if (i < 148 || i >= 156) sum += h[i]!;
    h.set(Buffer.from(`${sum.toString(8).padStart(6, '0')}\0 `), 148);
    expect(decodeTarHeader(h, 't')).toMatchObject({ name: 'a/1.cls', format: 'v7', size: 1 });
  });
});
