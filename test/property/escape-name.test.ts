/**
 * A file name that is not UTF-8 is listed as skipped with its bad bytes written `\xNN`: the same text as Python's
 * `bytes.decode('utf-8', 'backslashreplace')`, a decoder nobody here wrote, for any bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeName } from '../../src/pack/walk-listing.js';
import { hasTool, run } from '../helpers/tools.js';

// bytes that make well-formed, truncated, overlong and surrogate sequences often, not only noise
const utf8ish = fc.array(
  fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }),
    fc.integer({ min: 0x80, max: 0xff }),
    fc.constantFrom(0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xc0, 0xc1, 0x80, 0x82, 0x9f, 0xa0, 0xbf),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 2 }).map((s) => [...Buffer.from(s)]),
  ),
  { maxLength: 24 },
).map((parts) => Uint8Array.from(parts.flat()));

describe('escapeName', () => {
  it('keeps well-formed UTF-8 as it is', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 30 }), (s) => escapeName(Buffer.from(s)) === s));
  });

  it.runIf(hasTool('python3'))("writes what Python's backslashreplace writes, for any bytes", () => {
    const inputs = fc.sample(utf8ish, { numRuns: 3000, seed: Date.now() % 0x7fffffff });
    const script = "import sys, json\nprint(json.dumps([bytes.fromhex(h).decode('utf-8', 'backslashreplace') for h in json.load(sys.stdin)]))";
    const want = JSON.parse(run('python3', ['-c', script], { input: JSON.stringify(inputs.map((b) => Buffer.from(b).toString('hex'))) })) as string[];
    inputs.forEach((b, i) => expect(escapeName(b), Buffer.from(b).toString('hex')).toBe(want[i]));
  });
});
