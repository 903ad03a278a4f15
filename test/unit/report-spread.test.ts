import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { benchSummary } from '../../cli/commands/bench.js';
import { buildReport } from '../../src/bench/report-build.js';
import { formatRatio } from '../../src/bench/report-format.js';
import { formatSpread, formatSpreadNote, headline, ratioSpread } from '../../src/bench/report-spread.js';
import type { BenchReport } from '../../src/bench/report.js';
import { renderMarkdown } from '../../src/bench/render-md.js';
import { makeMeasurements } from '../helpers/bench-measurements.js';

/** A report whose options say `epochs` per run and `repeat` runs (ratioSpread reads nothing else of it). */
function shape(epochs: number, repeat: number): BenchReport {
  const report = buildReport(makeMeasurements(3, { epochs, repeat }));
  expect(report.options).toMatchObject({ epochs, repeat });
  return report;
}

describe('ratioSpread', () => {
  it('takes one ratio per alternated run (the medians of its epochs), or per paired epoch of a single run', () => {
    expect(ratioSpread(shape(2, 2), { epochSeconds: [2, 4, 3, 3] }, { epochSeconds: [1, 1, 2, 2] })).toEqual({ median: 2.25, min: 1.5, max: 3, count: 2, over: 'runs' });
    expect(ratioSpread(shape(3, 1), { epochSeconds: [2, 6, 3] }, { epochSeconds: [1, 2, 3] })).toEqual({ median: 2, min: 1, max: 3, count: 3, over: 'epochs' });
    // nothing to pair: fewer epochs than the options say, or a zero time
    expect(ratioSpread(shape(2, 2), { epochSeconds: [2, 4, 3] }, { epochSeconds: [1, 1, 2] })).toBeNull();
    expect(ratioSpread(shape(2, 1), { epochSeconds: [2, 4] }, { epochSeconds: [0, 1] })).toBeNull();
  });

  it('scales with the times and inverts when the sides swap (property)', () => {
    const times = (n: number) => fc.array(fc.double({ min: 1e-3, max: 1e3, noNaN: true }), { minLength: n, maxLength: n });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }).chain((epochs) => fc.integer({ min: 1, max: 4 }).chain((repeat) => fc.tuple(fc.constant(epochs), fc.constant(repeat), times(epochs * repeat), times(epochs * repeat), fc.double({ min: 0.1, max: 10, noNaN: true })))),
        ([epochs, repeat, slow, fast, k]) => {
          const report = shape(epochs, repeat);
          const s = ratioSpread(report, { epochSeconds: slow }, { epochSeconds: fast })!;
          expect(s.min).toBeLessThanOrEqual(s.max);
          expect(s.count).toBe(repeat > 1 ? repeat : epochs);
          const scaled = ratioSpread(report, { epochSeconds: slow.map((t) => t * k) }, { epochSeconds: fast })!;
          expect(scaled.min).toBeCloseTo(s.min * k, 6);
          expect(scaled.max).toBeCloseTo(s.max * k, 6);
          const swapped = ratioSpread(report, { epochSeconds: fast }, { epochSeconds: slow })!;
          expect(swapped.min).toBeCloseTo(1 / s.max, 6);
          expect(swapped.max).toBeCloseTo(1 / s.min, 6);
        },
      ),
      { seed: 23, numRuns: 200 },
    );
  });
});

describe('headline', () => {
  it('states the conclusion first with its run-to-run range, then the break-even, in report.md and the CLI summary', () => {
    const report = buildReport(makeMeasurements(5, { lmdb: true, repeat: 3 }));
    const spread = ratioSpread(report, report.sides.raw, report.sides.shards)!;
    expect(spread.over).toBe('runs');
    const lines = headline(report);
    expect(lines[0]).toMatch(/^Shards were [\d.]+x faster per epoch than raw files \(the median of the runs' ratios; min–max [\d.]+–[\d.]+x over 3 alternated runs\)\.$/);
    expect(lines[0]).toContain(`Shards were ${formatRatio(spread.median)} faster`);
    expect(lines[0]).toContain(formatSpread(spread));
    expect(lines.some((l) => l.startsWith('Against LMDB, shards were '))).toBe(true);
    expect(lines.some((l) => /^Packing paid for itself after [\d.]+ epochs\.$/.test(l))).toBe(true);
    // report.md: the headline right under the title
    expect(renderMarkdown(report).split('\n')[2]).toBe(lines.join(' '));
    expect(benchSummary(report)).toContain(`epochs ${formatRatio(spread.median)} faster (${formatSpreadNote(spread)})`);
  });

  it('with one run, says it shows no run-to-run spread and how to see it', () => {
    const report = buildReport(makeMeasurements(6, { repeat: 1 }));
    const lines = headline(report);
    expect(lines[0]).toMatch(/over 3 paired epochs of one run\)\.$/);
    expect(lines[lines.length - 1]).toMatch(/One run per side shows no run-to-run spread.*--repeat 5/);
  });
});
