/**
 * A tar header's checksum: the sum of its 512 bytes with the checksum field read as spaces. headerChecksum adds four
 * bytes a step when the block is 4-byte aligned (two 16-bit lanes a word); decodeTarHeader accepts the unsigned sum
 * and the historical signed one. Both against the plain byte-by-byte definition, for any bytes and any alignment.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { F_CHKSUM, TAR_BLOCK, decodeTarHeader, headerChecksum } from '../../formats/tar-header.js';

/** The definition, one byte at a time; `signed` reads each byte as a signed char (old Sun tar). */
function reference(block: Uint8Array, signed: boolean): number {
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i++) {
    const b = block[i] as number;
    sum += i >= F_CHKSUM[0] && i < F_CHKSUM[0] + F_CHKSUM[1] ? 0x20 : signed && b >= 0x80 ? b - 0x100 : b;
  }
  return sum;
}

/** Random bytes, or mostly 0xff (the largest sums: every lane near its limit), at offset 0-7 of a larger buffer. */
const blockArb = fc
  .tuple(fc.oneof(fc.uint8Array({ minLength: TAR_BLOCK, maxLength: TAR_BLOCK }), fc.uint8Array({ minLength: TAR_BLOCK, maxLength: TAR_BLOCK, min: 0xf0 })), fc.nat(7))
  .map(([bytes, at]) => {
    const buffer = new Uint8Array(TAR_BLOCK + 8);
    buffer.set(bytes, at);
    return buffer.subarray(at, at + TAR_BLOCK);
  });

describe('tar header checksum (property)', () => {
  it('headerChecksum is the byte sum with the checksum field as spaces, at any alignment', () => {
    fc.assert(
      fc.property(blockArb, (block) => {
        expect(headerChecksum(block)).toBe(reference(block, false));
      }),
      { numRuns: 3000 },
    );
    expect(headerChecksum(new Uint8Array(TAR_BLOCK).fill(0xff))).toBe(504 * 255 + 8 * 0x20);
  });

  it('decodeTarHeader takes a header whose stored checksum is the unsigned or the signed sum, and refuses any other', () => {
    fc.assert(
      fc.property(blockArb, fc.constantFrom('unsigned', 'signed', 'other'), (raw, which) => {
        const block = raw.slice();
        block.fill(0x30, 100, 108); // a mode and a size field of octal digits: the checksum is what is tested
        block.fill(0x30, 124, 135);
        block[135] = 0;
        const sum = which === 'other' ? reference(block, false) + 1 : reference(block, which === 'signed');
        if (sum < 0 || (which === 'other' && sum === reference(block, true))) return; // not writable in octal / a coincidence
        block.set(new TextEncoder().encode(`${sum.toString(8).padStart(6, '0')}\0 `), F_CHKSUM[0]);
        const decode = (): unknown => decodeTarHeader(block, 't');
        if (which === 'other') expect(decode).toThrow(/checksum mismatch/);
        else expect(decode()).toBeDefined();
      }),
      { numRuns: 2000 },
    );
  });
});
