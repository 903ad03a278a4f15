import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wrapWords } from '../../src/bench/charts.js';
import { isBold, sansSerifWidth } from '../../src/bench/text-width.js';

describe('sansSerifWidth', () => {
  it("adds DejaVu Sans advance widths: 'raw files' at 11 px, bold wider, any other character 1 em", () => {
    // r 411 + a 613 + w 818 + space 318 + f 352 + i 278 + l 278 + e 615 + s 521 = 4204 thousandths of an em
    expect(sansSerifWidth('raw files', 11)).toBeCloseTo(4.204 * 11, 9);
    expect(sansSerifWidth('raw files', 11, true)).toBeGreaterThan(sansSerifWidth('raw files', 11));
    expect(sansSerifWidth('⚠', 10)).toBe(10);
    expect(sansSerifWidth('', 11)).toBe(0);
    expect([isBold('bold'), isBold(700), isBold('600'), isBold('normal'), isBold(undefined), isBold(400)]).toEqual([true, true, true, false, false, false]);
  });
});

describe('wrapWords', () => {
  it('keeps every word in order and every line within the width, but for a word wider than it (property)', () => {
    const word = fc.stringMatching(/^[a-z0-9();,.]{1,14}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 30 }), fc.integer({ min: 40, max: 600 }), (words, px) => {
        const lines = wrapWords(words.join(' '), px, 11);
        expect(lines.join(' ')).toBe(words.join(' '));
        for (const line of lines) if (line.includes(' ')) expect(sansSerifWidth(line, 11)).toBeLessThanOrEqual(px);
        // no two lines could have been one
        for (let i = 1; i < lines.length; i++) expect(sansSerifWidth(`${lines[i - 1]} ${(lines[i] as string).split(' ')[0]}`, 11)).toBeGreaterThan(px);
      }),
      { seed: 10, numRuns: 300 },
    );
  });
});
