/**
 * Runs the reads of a pack's source in threads. The calling thread walks the source, cuts the samples into tasks and
 * hands task t to reader thread t mod N (source-worker.ts), which reads and encodes it ahead of the writer; the
 * batches come back to the calling thread in task order. So on Lots Of Small Files the open/fstat/read/close of the
 * next files overlap the writer's shard writes and index work instead of adding to them, and N readers keep N reads
 * in flight on a cold disk. Batches carry the bytes in transferred ArrayBuffers (no copy between threads) that the
 * consumer hands back for reuse; credits bound the batches in flight, and tasks-ahead the work handed out, so
 * memory stays at a few batches per reader whatever the dataset size.
 */
import type { Worker } from 'node:worker_threads';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { BATCH_BYTES } from './batch-builder.js';
import { startReader } from './reader-start.js';
import { threadError, type ReaderMessage, type WorkerMessage } from './reader-protocol.js';
import { readTasks, type EncodeOptions, type SourceBatch, type SourceBatchOptions } from './source-batches.js';
import { sourceTasks } from './source-tasks.js';
import type { WalkStats } from './walk.js';

/** Batches read ahead of the consumer, per reader. */
const BATCHES_AHEAD = 3;
/** Tasks handed to one reader thread beyond those the writer has finished. */
const TASKS_AHEAD = 8;

export interface SourceBatches extends AsyncIterable<SourceBatch> {
  /** The walk's counters; complete once the iteration has ended. */
  readonly stats: WalkStats;
  /** Gives a batch's buffers back for reuse once none of its bytes are needed any more (optional). */
  recycle(batch: SourceBatch): void;
}

/**
 * Opens the batches of a source. The walk runs in this thread and cuts the samples into tasks; `threads` worker
 * threads read and encode the tasks (task t in thread t mod threads), and their batches come back here in task
 * order. 0 reads in this thread.
 */
export function openSourceBatches(options: SourceBatchOptions, threads: number): SourceBatches {
  const spare = new Map<number, ArrayBuffer[]>();
  const keep = (lane: number, batch: SourceBatch): void => {
    const pool = spare.get(lane) ?? [];
    spare.set(lane, pool);
    for (const c of batch.chunks) if (c.byteLength === BATCH_BYTES && pool.length < BATCHES_AHEAD) pool.push(c);
  };
  const result = {
    stats: undefined as unknown as WalkStats,
    recycle: (batch: SourceBatch): void => keep(threads <= 0 ? 0 : batch.task % threads, batch),
    [Symbol.asyncIterator]: (): AsyncIterator<SourceBatch> => {
      const setStats = (s: WalkStats): void => {
        result.stats = s;
      };
      if (threads <= 0) return readTasks(sourceTasks(options, setStats), options.encode, () => spare.get(0)?.pop())[Symbol.asyncIterator]();
      return inWorkers(options, threads, setStats, (lane) => spare.get(lane)?.splice(0) ?? [])[Symbol.asyncIterator]();
    },
  };
  return result;
}

/** One reader thread: takes tasks, sends batches. */
class ReaderLane {
  private readonly worker: Worker;
  private readonly queue: SourceBatch[] = [];
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(encode: EncodeOptions | undefined) {
    this.worker = startReader();
    this.send({ type: 'init', encode, ahead: BATCHES_AHEAD });
    this.worker.on('message', (m: WorkerMessage) => {
      if (m.type === 'batch') this.queue.push(m.batch);
      else this.failure ??= threadError(m);
      this.wake?.();
    });
    this.worker.on('error', (err) => {
      this.failure ??= err;
      this.wake?.();
    });
    this.worker.on('exit', (code) => {
      this.failure ??= new ShardkitError(ErrorCodes.IO, `a source reader thread stopped (exit code ${code})`);
      this.wake?.();
    });
  }

  /** A message to the reader: its init, a task, the end of the tasks. */
  send(m: ReaderMessage): void {
    this.worker.postMessage(m);
  }

  /** One more batch wanted, with buffers to reuse. */
  credit(chunks: ArrayBuffer[]): void {
    this.worker.postMessage({ type: 'credit', chunks } satisfies ReaderMessage, chunks);
  }

  /** The next batch this reader sends. */
  async next(): Promise<SourceBatch> {
    for (;;) {
      const batch = this.queue.shift();
      if (batch !== undefined) return batch;
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }

  /** Stops the thread (after an error: a reader stopped mid-task must not keep running). */
  async close(): Promise<void> {
    this.failure ??= new Error('closed');
    await this.worker.terminate();
  }
}

/**
 * Reader threads fed by this thread's walk: the walk cuts tasks and sends task t to reader t mod threads, staying at
 * most TASKS_AHEAD tasks per reader beyond those written; the batches come back here and are yielded in task order.
 * The walk is light next to the reads (a listing per directory, a few strings per file) and this thread waits on
 * the readers much of the time, so it walks in between instead of a thread of its own taking a core.
 */
async function* inWorkers(options: SourceBatchOptions, threads: number, setStats: (s: WalkStats) => void, spareChunks: (lane: number) => ArrayBuffer[]): AsyncGenerator<SourceBatch> {
  const lanes = Array.from({ length: threads }, () => new ReaderLane(options.encode));
  let dispatched = 0;
  let total: number | undefined;
  let walkFailure: unknown;
  let written = 0;
  let stopped = false;
  let progress: (() => void) | undefined;
  let resumeWalk: (() => void) | undefined;
  const walk = (async () => {
    try {
      for await (const task of sourceTasks(options, setStats)) {
        while (task.task >= written + TASKS_AHEAD * threads && !stopped) {
          await new Promise<void>((resolve) => {
            resumeWalk = resolve;
          });
          resumeWalk = undefined;
        }
        if (stopped) return;
        (lanes[task.task % threads] as ReaderLane).send({ type: 'task', task });
        dispatched = task.task + 1;
        progress?.();
      }
      total = dispatched;
    } catch (err) {
      walkFailure = err;
    } finally {
      for (const lane of lanes) lane.send({ type: 'end' });
      progress?.();
    }
  })();
  try {
    for (let task = 0; ; task++) {
      // wait until the walk has handed out this task, or has ended before it
      while (task >= dispatched && total === undefined && walkFailure === undefined) {
        await new Promise<void>((resolve) => {
          progress = resolve;
        });
        progress = undefined;
      }
      if (walkFailure !== undefined) throw walkFailure;
      if (total !== undefined && task >= total) break;
      const lane = lanes[task % threads] as ReaderLane;
      for (;;) {
        const batch = await lane.next();
        if (batch.task !== task) throw new Error(`source reader ${task % threads} sent task ${batch.task} where task ${task} was due`);
        yield batch;
        lane.credit(spareChunks(task % threads));
        if (batch.last) break;
      }
      written = task + 1;
      resumeWalk?.();
    }
  } finally {
    stopped = true;
    resumeWalk?.();
    await walk;
    await Promise.all(lanes.map((l) => l.close()));
  }
}
