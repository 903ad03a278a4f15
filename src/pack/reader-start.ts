/**
 * Starting pack's reader threads (source-worker.ts). A thread takes ~0.1 s to start and load its modules; the
 * command line starts them first thing (prestartReaders), so that happens while the main thread loads its own,
 * and the pack takes them over (startReader). Only node built-ins here: importing this costs nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** Reader threads at most by default: two keep two reads in flight (see PackOptions.readThreads). */
export const DEFAULT_READ_THREADS = 2;

/**
 * Reader threads a pack starts with by default: two where the process may use two cores or more, else one, which
 * a second joins when the reads wait on the disk (source-threads.ts). From the page cache one reader is the pack's
 * critical path (the main thread waited on it for half of a 100k-file pack), and two took 0.96x the time on 2 cores
 * (100k small files, 15 alternated rounds; 1M files: 0.80x).
 */
export function initialReadThreads(): number {
  return os.availableParallelism() >= 2 ? DEFAULT_READ_THREADS : 1;
}

/** The worker's script next to this module once compiled; absent when running from TypeScript sources. */
const WORKER_URL = new URL('./source-worker.js', import.meta.url);

/** Whether the source can be read in a worker thread here (the compiled worker script exists). */
export function workerAvailable(): boolean {
  return fs.existsSync(fileURLToPath(WORKER_URL));
}

/** Started ahead and not taken yet; they do not keep the process alive. */
const started = new Set<Worker>();

/** Starts `count` reader threads now, for the next pack of this process to take (none where workers are unavailable). */
export function prestartReaders(count: number): void {
  if (!workerAvailable()) return;
  for (let i = 0; i < count; i++) {
    const worker = new Worker(WORKER_URL);
    worker.unref();
    // one that fails before a pack takes it is dropped (the pack starts a new one, whose failure it reports)
    const drop = (): void => {
      started.delete(worker);
    };
    worker.once('error', drop).once('exit', drop);
    started.add(worker);
  }
}

/** A reader thread: one started ahead, or a new one. It waits for its `init` message. */
export function startReader(): Worker {
  for (const worker of started) {
    started.delete(worker);
    worker.removeAllListeners('error').removeAllListeners('exit');
    worker.ref();
    return worker;
  }
  return new Worker(WORKER_URL);
}
