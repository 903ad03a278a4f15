/**
 * Tar numeric fields read as Python's tarfile reads them (WebDataset's reader), for any field bytes: leading and
 * trailing white space, NULs in odd places, stray characters, GNU base-256. A field one reader takes and the other
 * does not would make the two see different members in one tar. (Python's int() also takes a sign, `_` between
 * digits and a `0o` prefix; no tar writer puts those in a header, and we refuse them, so they are not generated.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseNumericField } from '../../formats/tar-header.js';
import { hasTool, run } from '../helpers/tools.js';

const FIELD = 12;
const field = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.constantFrom(0x30, 0x31, 0x37, 0x38, 0x20, 0x00, 0x09, 0x0a, 0x1f, 0x78), { minLength: FIELD, maxLength: FIELD }) },
  // an octal number padded as writers pad it, with its NULs and spaces moved around
  { weight: 3, arbitrary: fc.tuple(fc.nat({ max: 0o7777777 }), fc.nat({ max: 3 }), fc.nat({ max: 3 }), fc.boolean()).map(([n, lead, trail, nulFirst]) => {
    const text = `${(nulFirst ? '\0' : ' ').repeat(lead)}${n.toString(8)}${'\0 '.repeat(trail)}`.slice(0, FIELD).padEnd(FIELD, '\0');
    return [...Buffer.from(text, 'latin1')];
  }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(0x80, 0xff), fc.array(fc.nat({ max: 255 }), { minLength: FIELD - 1, maxLength: FIELD - 1 })).map(([h, rest]) => [h, ...rest]) },
);

describe('parseNumericField', () => {
  it.runIf(hasTool('python3'))("reads every field as Python's tarfile.nti does (NaN where it raises)", () => {
    const fields = fc.sample(field, { numRuns: 4000, seed: Date.now() % 0x7fffffff });
    const script = [
      'import sys, json, tarfile',
      'def one(h):',
      '    try:',
      '        n = tarfile.nti(bytes.fromhex(h))',
      '        return n if 0 <= n < 2**53 else None',
      '    except tarfile.HeaderError:',
      '        return None',
      'print(json.dumps([one(h) for h in json.load(sys.stdin)]))',
    ].join('\n');
    const want = JSON.parse(run('python3', ['-c', script], { input: JSON.stringify(fields.map((f) => Buffer.from(f).toString('hex'))) })) as (number | null)[];
    fields.forEach((f, i) => {
      const got = parseNumericField(Uint8Array.from(f), [0, FIELD]);
      expect(Number.isNaN(got) ? null : got, Buffer.from(f).toString('hex')).toBe(want[i]);
    });
  });
});
