/** Order statistics for bench reports: medians, nearest-rank percentiles and downsampled CDFs. */

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of an empty list');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest-rank percentile of an ascending list: the smallest value with at least `p` of the list at or under it. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new RangeError('percentile of an empty list');
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

/**
 * An empirical CDF cut down to about `points` points, evenly spaced in fraction, plus the p99 and p99.9 ranks so
 * the tail that matters for stalls survives downsampling. Each point is (value, fraction of values <= it).
 */
export function downsampledCdf(sorted: readonly number[], points = 100): { seconds: number; fraction: number }[] {
  const n = sorted.length;
  if (n === 0) return [];
  const ranks = new Set<number>([1, n, Math.ceil(0.99 * n), Math.ceil(0.999 * n)]);
  for (let i = 1; i <= points; i++) ranks.add(Math.ceil((i * n) / points));
  return [...ranks]
    .sort((a, b) => a - b)
    .map((k) => ({ seconds: sorted[k - 1]!, fraction: k / n }));
}
