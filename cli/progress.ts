/** A progress bar on a TTY (cli-progress), nothing otherwise: logs and pipes get one summary line instead. */
import { createRequire } from 'node:module';
import type CliProgress from 'cli-progress';

export interface ProgressBar {
  update(done: number, total: number | undefined, payload: Record<string, string>): void;
  stop(): void;
}

/**
 * cli-progress, loaded where a bar is shown: a run without a terminal (a batch job, a pipe) and `shardkit --help`
 * never pay for it (~20 ms of CommonJS loading).
 */
export function loadCliProgress(): typeof CliProgress {
  return createRequire(import.meta.url)('cli-progress') as typeof CliProgress;
}

export function progressBar(enabled: boolean, unit: string): ProgressBar {
  if (!enabled || !process.stderr.isTTY) return { update() {}, stop() {} };
  const cliProgress = loadCliProgress();
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      // until the total is known (a count runs beside the work), no bar: the count so far and the rate. Our own ETA:
      // cli-progress shows "LLs" for its NaN estimate once nothing is left to do
      format: (options, params, payload: Record<string, string>) =>
        payload.left === undefined
          ? `${params.value} ${unit} | ${payload.rate ?? ''} | counting`
          : cliProgress.Format.Formatter({ ...options, format: `{bar} {percentage}% | {value}/{total} ${unit} | {rate} | ETA {left}` }, params, payload),
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  const t0 = performance.now();
  return {
    update(done, total, payload) {
      const seconds = (performance.now() - t0) / 1000;
      const withEta = total === undefined ? payload : { ...payload, left: done === 0 ? '?' : formatEta(Math.max(0, total - done) * (seconds / done)) };
      if (!started) {
        bar.start(total ?? done, done, withEta);
        started = true;
      }
      if (total !== undefined) bar.setTotal(total);
      bar.update(done, withEta);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/** Seconds left as `45s`, `3m05s` or `1h02m`. */
export function formatEta(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
