/** Number formatting shared by report.md and report.html, so both show the same figures. */

export function formatSeconds(s: number): string {
  if (s === 0) return '0 s';
  if (s < 1e-3) return `${(s * 1e6).toPrecision(3)} µs`;
  if (s < 1) return `${(s * 1e3).toPrecision(3)} ms`;
  return `${s.toPrecision(s < 1000 ? 3 : 4)} s`;
}

export function formatNumber(n: number, digits = 3): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 10 ** digits) return Math.round(n).toLocaleString('en-US');
  return Number(n.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

/** A ratio as "12.3x"; "n/a" when there is none. */
export function formatRatio(r: number | null): string {
  return r === null ? 'n/a' : `${formatNumber(r)}x`;
}

export function formatPercent(r: number | null): string {
  return r === null ? 'n/a' : `${(r * 100).toFixed(1)} %`;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${units[u]}`;
}

export function formatEpochs(e: number | null): string {
  return e === null ? 'never (shards not faster, or pack time unknown)' : `${formatNumber(e)} epochs`;
}

/**
 * Where the i-th timed epoch of a side (0-based, in run order) ran: `run r / epoch e`, 1-based. A side's epochs
 * are listed run by run, each run's `epochsPerRun` epochs in order.
 */
export function runEpoch(i: number, epochsPerRun: number): { run: number; epoch: number } {
  const per = Math.max(1, epochsPerRun);
  return { run: Math.floor(i / per) + 1, epoch: (i % per) + 1 };
}

/** `run 2 / epoch 1`, shortened to `2 / 1` in table cells. */
export function formatRunEpoch(i: number, epochsPerRun: number, short = false): string {
  const { run, epoch } = runEpoch(i, epochsPerRun);
  return short ? `${run} / ${epoch}` : `run ${run} / epoch ${epoch}`;
}
