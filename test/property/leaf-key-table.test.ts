import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildKeyTable, findKey, hashKey } from '../../src/read/leaf-key-table.js';

const keyArb = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  // keys that differ only in their last characters, as numbered samples do
  fc.integer({ min: 0, max: 5000 }).map((i) => `train/img-${String(i).padStart(6, '0')}`),
);

describe('leaf key table (property)', () => {
  it('finds every key at its first slot and no key the leaf does not hold', () => {
    fc.assert(
      fc.property(fc.array(keyArb, { maxLength: 400 }), fc.array(keyArb, { maxLength: 40 }), (keys, probes) => {
        const table = buildKeyTable(keys);
        const pairs = table.length / 2;
        expect(pairs & (pairs - 1)).toBe(0); // a power of two: the probe masks with pairs - 1
        expect(pairs).toBeGreaterThanOrEqual(2 * keys.length); // load at most one half
        for (const key of [...keys, ...probes]) expect(findKey(table, keys, key)).toBe(keys.indexOf(key));
      }),
    );
  });

  it('spreads numbered keys over the table: no long probe runs', () => {
    const keys = Array.from({ length: 250 }, (_, i) => `n01440764/n01440764_${10026 + i}`);
    const table = buildKeyTable(keys);
    const pairs = table.length / 2;
    let longest = 0;
    let run = 0;
    for (let j = 0; j < 2 * pairs; j++) {
      run = table[2 * (j % pairs) + 1] === 0 ? 0 : run + 1;
      longest = Math.max(longest, run);
    }
    expect(longest).toBeLessThan(16);
    expect(new Set(keys.map(hashKey)).size).toBe(keys.length);
  });

  it('does not take a key for another one with the same hash', () => {
    const [held, other] = ['key-901258', 'key-1540052']; // found by a search: equal 32-bit hashes
    expect(hashKey(held)).toBe(hashKey(other));
    const keys = ['key-0', held, 'key-2'];
    const table = buildKeyTable(keys);
    expect(findKey(table, keys, held)).toBe(1);
    expect(findKey(table, keys, other)).toBe(-1);
    const both = [held, other];
    expect(findKey(buildKeyTable(both), both, other)).toBe(1);
  });
});
