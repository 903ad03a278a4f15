/**
 * Every ratio printed next to a "min–max" range (report.md, report.html, the CLI summary; shards vs raw and vs LMDB)
 * lies inside that range as printed, whatever the epoch times, and report.json holds the same figures.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { benchSummary } from '../../cli/commands/bench.js';
import { buildReport } from '../../src/bench/report-build.js';
import { formatRatio } from '../../src/bench/report-format.js';
import { headline, ratioSpread } from '../../src/bench/report-spread.js';
import { summaryTable } from '../../src/bench/report-tables.js';
import { makeMeasurements } from '../helpers/bench-measurements.js';
import { defined } from '../helpers/checked.js';

const schema = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../../src/bench/report-schema.json', import.meta.url)), 'utf8')) as object;
const validate = new Ajv2020({ strict: true, allErrors: true, validateFormats: false }).compile(schema);

/** A number as formatNumber prints it (`1,234.5` included). */
const NUMBER = String.raw`(\d[\d,]*(?:\.\d+)?)`;
const value = (printed: string): number => Number(printed.replaceAll(',', ''));

/** The figure `figure` matches in `text` (its first group) and the printed range after it; fails when either is missing. */
function figureAndRange(text: string, figure: RegExp, range: RegExp): { figure: number; min: number; max: number } {
  const f = figure.exec(text);
  const r = range.exec(text);
  expect(f, `a figure in: ${text}`).not.toBeNull();
  expect(r, `a range in: ${text}`).not.toBeNull();
  return { figure: value(defined(f?.[1], 'the figure')), min: value(defined(r?.[1], 'the range min')), max: value(defined(r?.[2], 'the range max')) };
}

function expectInside(text: string, figure: RegExp, range: RegExp): void {
  const got = figureAndRange(text, figure, range);
  expect(got.min, text).toBeLessThanOrEqual(got.figure);
  expect(got.figure, text).toBeLessThanOrEqual(got.max);
}

const SENTENCE_RANGE = new RegExp(`min–max ${NUMBER}–${NUMBER}x`);
const CELL_RANGE = new RegExp(`\\(${NUMBER}–${NUMBER}x\\)`);

describe('a ratio printed with a range (property)', () => {
  it('lies within the printed min–max, in the headline, the summary table and the CLI, and report.json agrees', () => {
    const times = (n: number) => fc.array(fc.double({ min: 1e-3, max: 1e3, noNaN: true }), { minLength: n, maxLength: n });
    const shapeArb = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 5 }));
    fc.assert(
      fc.property(
        shapeArb.chain(([epochs, repeat]) => fc.tuple(fc.constant(epochs), fc.constant(repeat), times(epochs * repeat), times(epochs * repeat), times(epochs * repeat))),
        fc.nat(1000),
        ([epochs, repeat, rawTimes, shardTimes, lmdbTimes], seed) => {
          const m = makeMeasurements(seed, { epochs, repeat, lmdb: true, samples: 100 });
          const lmdb = defined(m.lmdb, 'the LMDB side');
          const report = buildReport({ ...m, raw: { ...m.raw, epochSeconds: rawTimes }, shards: { ...m.shards, epochSeconds: shardTimes }, lmdb: { ...lmdb, epochSeconds: lmdbTimes } });
          expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
          const spread = defined(report.comparison.speedupSpread ?? undefined, 'speedupSpread');
          const vsLmdb = defined(report.comparison.lmdbVsShardsSpread ?? undefined, 'lmdbVsShardsSpread');
          // report.json holds the same statistic the text prints
          expect(spread).toEqual(ratioSpread(report, report.sides.raw, report.sides.shards));
          expect(vsLmdb).toEqual(ratioSpread(report, report.sides.lmdb!, report.sides.shards));
          expect(spread.min).toBeLessThanOrEqual(spread.median);
          expect(spread.median).toBeLessThanOrEqual(spread.max);

          // report.md and report.html open with these lines
          const lines = headline(report);
          const first = defined(lines[0], 'the headline');
          expect(first).toContain(`Shards were ${formatRatio(spread.median)} `);
          expectInside(first, new RegExp(`^Shards were ${NUMBER}x`), SENTENCE_RANGE);
          const lmdbLine = defined(lines.find((l) => l.startsWith('Against LMDB')), 'the LMDB line');
          expect(lmdbLine).toContain(`shards were ${formatRatio(vsLmdb.median)} `);
          expectInside(lmdbLine, new RegExp(`shards were ${NUMBER}x`), SENTENCE_RANGE);

          // the summary table (report.md and report.html): time and throughput ratios with their range
          const rows = summaryTable(report).rows;
          for (const name of ['median epoch', 'samples/s']) {
            const cell = defined(rows.find((r) => r[0] === name)?.at(-1), `the ${name} ratio cell`);
            expect(cell.startsWith(formatRatio(spread.median))).toBe(true);
            expectInside(cell, new RegExp(`^${NUMBER}x`), CELL_RANGE);
          }

          // the CLI's summary: faster, or SLOWER with the raw/shards ratio the range is of
          const summary = benchSummary(report).split('\n');
          const vsRaw = defined(summary.find((l) => l.startsWith('shards vs raw: ')), 'the CLI line');
          expectInside(vsRaw, spread.median >= 1 ? new RegExp(`epochs ${NUMBER}x faster`) : new RegExp(`raw/shards time ratio ${NUMBER}x`), SENTENCE_RANGE);
          const lmdbCli = defined(summary.find((l) => l.startsWith('lmdb epoch / shards epoch: ')), 'the CLI LMDB line');
          expectInside(lmdbCli, new RegExp(`^lmdb epoch / shards epoch: ${NUMBER}x`), SENTENCE_RANGE);
        },
      ),
      { seed: 41, numRuns: 300 },
    );
  });
});
