import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32cReference } from '../../formats/checksum.js';
import { JS_CRC_MAX_BYTES, crc32cSpan } from '../../formats/crc32c-span.js';

describe('crc32cSpan (property)', () => {
  it('equals the reference CRC32C of the same range, on both sides of the JavaScript/native threshold', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3 * JS_CRC_MAX_BYTES }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
        const end = start + (b % (bytes.length - start + 1));
        expect(crc32cSpan(bytes, start, end)).toBe(crc32cReference(bytes.subarray(start, end)));
      }),
      { numRuns: 500 },
    );
  });

  it('gives the CRC32C check value of "123456789" (0xE3069283) and 0 for no bytes', () => {
    expect(crc32cSpan(new TextEncoder().encode('x123456789'), 1, 10)).toBe(0xe3069283);
    expect(crc32cSpan(new Uint8Array(4), 2, 2)).toBe(0);
  });
});
