/**
 * How much a time ratio between two sides moves from run to run, and the report's headline sentence, which states
 * the conclusion with that spread. An identical rerun of a bench has moved the shards-vs-raw ratio from 1.32x to
 * 1.08x: a ratio without its spread invites reading noise as a result. A ratio printed with a range is the median
 * of the ratios the range is over, so it always lies inside it (the ratio of the pooled medians need not).
 */
import { median } from './report-stats.js';
import { formatEpochs, formatNumber, formatRatio } from './report-format.js';
import type { BenchReport, SideResult } from './report.js';

export interface RatioSpread {
  /** The median of the ratios: the figure printed with this range, so it lies inside it. */
  median: number;
  min: number;
  max: number;
  /** How many ratios the range is over. */
  count: number;
  /**
   * 'runs': one ratio per alternated run (the medians of that run's epochs on each side), the run-to-run spread;
   * 'epochs': one run only, one ratio per pair of epochs with the same place in their run.
   */
  over: 'runs' | 'epochs';
}

/** A side's epoch times grouped by run (run-major, `epochsPerRun` each); undefined when they do not divide evenly. */
function byRun(s: Pick<SideResult, 'epochSeconds'>, epochsPerRun: number, runs: number): number[][] | undefined {
  if (epochsPerRun < 1 || s.epochSeconds.length !== epochsPerRun * runs) return undefined;
  return Array.from({ length: runs }, (_, r) => s.epochSeconds.slice(r * epochsPerRun, (r + 1) * epochsPerRun));
}

/**
 * The range of `slow`'s epoch time over `fast`'s (how many times faster `fast` is), per alternated run, or per
 * paired epoch when there was one run. Null when there is nothing to pair or a time is zero.
 */
export function ratioSpread(report: Pick<BenchReport, 'options'>, slow: Pick<SideResult, 'epochSeconds'>, fast: Pick<SideResult, 'epochSeconds'>): RatioSpread | null {
  const { epochs, repeat } = report.options;
  const a = byRun(slow, epochs, repeat);
  const b = byRun(fast, epochs, repeat);
  if (a === undefined || b === undefined) return null;
  const pairs: [number, number][] =
    repeat > 1 ? a.map((run, r) => [median(run), median(b[r] as number[])]) : (a[0] as number[]).map((t, i) => [t, (b[0] as number[])[i] as number]);
  if (pairs.length === 0 || pairs.some(([x, y]) => !(x > 0) || !(y > 0))) return null;
  const ratios = pairs.map(([x, y]) => x / y);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), count: ratios.length, over: repeat > 1 ? 'runs' : 'epochs' };
}

/** `min–max 2.91–3.60x over 3 alternated runs`; with one run, over its paired epochs. */
export function formatSpread(s: RatioSpread | null): string {
  if (s === null) return 'no spread: too few epochs to pair';
  const range = `${formatNumber(s.min)}–${formatRatio(s.max)}`;
  return s.over === 'runs' ? `min–max ${range} over ${s.count} alternated runs` : `min–max ${range} over ${s.count} paired epochs of one run`;
}

/** What the figure printed with a range is: `the median of the runs' ratios`, or of the paired epochs' with one run. */
export function spreadMedianLabel(s: RatioSpread): string {
  return s.over === 'runs' ? "the median of the runs' ratios" : "the median of the paired epochs' ratios";
}

/** `the median of the runs' ratios; min–max 2.91–3.60x over 3 alternated runs`: what follows the median in brackets. */
export function formatSpreadNote(s: RatioSpread): string {
  return `${spreadMedianLabel(s)}; ${formatSpread(s)}`;
}

/** `3.24x faster` or `0.8x the speed (slower)`: a ratio of times read the right way round. */
function faster(ratio: number): string {
  return ratio >= 1 ? `${formatRatio(ratio)} faster` : `${formatRatio(ratio)} the speed (slower)`;
}

/**
 * The report's first sentences: the conclusion with its spread, the break-even, and what a single run cannot
 * show. Plain text, shared by report.md and report.html.
 */
export function headline(report: BenchReport): string[] {
  const { raw, shards, lmdb } = report.sides;
  const { speedup, speedupSpread: spread, lmdbVsShardsSpread } = report.comparison;
  const lines: string[] = [];
  if (spread !== null) lines.push(`Shards were ${faster(spread.median)} per epoch than raw files (${formatSpreadNote(spread)}).`);
  else if (speedup === null) lines.push(`No ratio: an epoch time was zero.`);
  // no per-run ratios to take a median of: the ratio of the pooled medians, labelled as such, without a range
  else lines.push(`Shards were ${faster(speedup)} per epoch (median of ${shards.epochSeconds.length} epochs) than raw files (${formatSpread(null)}).`);
  if (lmdb !== undefined && lmdb.medianSeconds > 0 && shards.medianSeconds > 0) {
    const vsLmdb = lmdbVsShardsSpread ?? null;
    lines.push(
      vsLmdb === null
        ? `Against LMDB, shards were ${faster(lmdb.medianSeconds / shards.medianSeconds)} per epoch (medians of all epochs; ${formatSpread(null)}).`
        : `Against LMDB, shards were ${faster(vsLmdb.median)} (${formatSpreadNote(vsLmdb)}).`,
    );
  }
  const be = report.comparison.breakEvenEpochs;
  if (be !== null) lines.push(`Packing paid for itself after ${formatEpochs(be)}.`);
  lines.push(
    report.options.repeat > 1
      ? 'Ratios move between identical runs (machine load, page cache, CPU frequency): read each with its range.'
      : 'One run per side shows no run-to-run spread, and an identical rerun can move a ratio by more than this range: rerun with --repeat 5 before drawing a conclusion.',
  );
  return lines;
}
