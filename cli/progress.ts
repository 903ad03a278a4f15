/** A progress bar on a TTY (cli-progress), nothing otherwise: logs and pipes get one summary line instead. */
import cliProgress from 'cli-progress';

export interface ProgressBar {
  update(done: number, total: number | undefined, payload: Record<string, string>): void;
  stop(): void;
}

export function progressBar(enabled: boolean, unit: string): ProgressBar {
  if (!enabled || !process.stderr.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: `{bar} {percentage}% | {value}/{total} ${unit} | {rate} | ETA {eta_formatted}`,
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total, payload) {
      if (!started) {
        bar.start(total ?? done, done, payload);
        started = true;
      }
      if (total !== undefined) bar.setTotal(total);
      bar.update(done, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
