/**
 * Runs the source side of a pack in threads. A walk thread (walk-worker.ts) cuts the samples into tasks and hands
 * task t to reader thread t mod N (source-worker.ts), which reads and encodes it ahead of the writer; the batches
 * come back to the calling thread in task order. So on Lots Of Small Files the open/fstat/read/close of the next
 * files overlap the writer's shard writes and index work instead of adding to them, and N readers keep N reads in
 * flight on a cold disk. With one reader, that thread walks the source itself (no walk thread, no tasks handed
 * between threads). Batches carry the bytes in transferred ArrayBuffers (no copy between threads) that the
 * consumer hands back for reuse; credits bound the batches in flight, and tasks-ahead the work handed out, so
 * memory stays at a few batches per reader whatever the dataset size.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { ErrorCodes, ShardkitError, isShardkitError, type ErrorCode } from '../../formats/errors.js';
import { BATCH_BYTES } from './batch-builder.js';
import { readTasks, sourceTasks, type EncodeOptions, type SourceBatch, type SourceBatchOptions, type SourceTask } from './source-batches.js';
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

/** The worker's script next to this module once compiled; absent when running from TypeScript sources. */
const WORKER_URL = new URL('./source-worker.js', import.meta.url);

/** Whether the source can be read in a worker thread here (the compiled worker script exists). */
export function workerAvailable(): boolean {
  return fs.existsSync(fileURLToPath(WORKER_URL));
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
      if (threads === 1) return inOneWorker(options, setStats, () => spare.get(0)?.splice(0) ?? [])[Symbol.asyncIterator]();
      return inWorkers(options, threads, setStats, (lane) => spare.get(lane)?.splice(0) ?? [])[Symbol.asyncIterator]();
    },
  };
  return result;
}

/** Messages from a reader thread: a batch; the walk's counters after the last batch (the only reader walks); a failure. */
export type WorkerMessage = { type: 'batch'; batch: SourceBatch } | { type: 'walked'; stats: WalkStats } | ThreadError;

/** A failure reported by a reader or the walk thread. */
export type ThreadError = { type: 'error'; code?: ErrorCode; message: string; file?: string; key?: string };

/** Messages to a reader thread: a task to read, no more tasks, or one more batch wanted (with buffers to reuse). */
export type ReaderMessage = { type: 'task'; task: SourceTask } | { type: 'end' } | { type: 'credit'; chunks: ArrayBuffer[] };

/** Messages from the walk thread. */
export type WalkerMessage = { type: 'dispatched'; tasks: number } | { type: 'end'; tasks: number; stats: WalkStats } | ThreadError;

/** What the walk thread is told: tasks written so far (it stays at most TASKS_AHEAD per reader beyond). */
export interface WrittenMessage {
  type: 'written';
  tasks: number;
}

/** The walk thread's start-up data. */
export interface WalkerData {
  options: SourceBatchOptions;
  threads: number;
  tasksAhead: number;
  /** One port per reader thread: task t goes to port t mod threads. */
  ports: MessagePort[];
}

/** An error thrown in a thread, as a message. */
export function toThreadError(err: unknown): ThreadError {
  if (isShardkitError(err)) return { type: 'error', code: err.code, message: err.message, ...(err.file === undefined ? {} : { file: err.file }), ...(err.key === undefined ? {} : { key: err.key }) };
  return { type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) };
}

function threadError(m: ThreadError): Error {
  const details = { ...(m.file === undefined ? {} : { file: m.file }), ...(m.key === undefined ? {} : { key: m.key }) };
  return m.code === undefined ? new Error(m.message) : new ShardkitError(m.code, m.message, details);
}

/** The walk thread's script, next to this module once compiled. */
const WALKER_URL = new URL('./walk-worker.js', import.meta.url);

/** One reader thread: takes tasks (from the walk thread's port, or from a walk of its own), sends batches. */
class ReaderLane {
  private readonly worker: Worker;
  private readonly queue: SourceBatch[] = [];
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  /** The walk's counters, once a reader that walks has sent its last batch. */
  walked: WalkStats | undefined;

  constructor(encode: EncodeOptions | undefined, source: { tasks: MessagePort } | { walk: SourceBatchOptions }) {
    const transferList = 'tasks' in source ? [source.tasks] : [];
    this.worker = new Worker(WORKER_URL, { workerData: { encode, ahead: BATCHES_AHEAD, ...source }, transferList });
    this.worker.on('message', (m: WorkerMessage) => {
      if (m.type === 'batch') this.queue.push(m.batch);
      else if (m.type === 'walked') this.walked = m.stats;
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

  /** One more batch wanted, with buffers to reuse. */
  credit(chunks: ArrayBuffer[]): void {
    this.worker.postMessage({ type: 'credit', chunks } satisfies ReaderMessage, chunks);
  }

  /** The next batch this reader sends; undefined after the last one of a reader that walks. */
  async next(): Promise<SourceBatch | undefined> {
    for (;;) {
      const batch = this.queue.shift();
      if (batch !== undefined) return batch;
      if (this.walked !== undefined) return undefined;
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
 * One reader thread that walks the source itself: on a machine with few cores, a thread less than a walk thread
 * and a reader (no tasks to hand between them, one fewer thread to share the cores with).
 */
async function* inOneWorker(options: SourceBatchOptions, setStats: (s: WalkStats) => void, spareChunks: () => ArrayBuffer[]): AsyncGenerator<SourceBatch> {
  const lane = new ReaderLane(options.encode, { walk: options });
  try {
    for (let batch = await lane.next(); batch !== undefined; batch = await lane.next()) {
      yield batch;
      lane.credit(spareChunks());
    }
    setStats(lane.walked as WalkStats);
  } finally {
    await lane.close();
  }
}

/**
 * Reader threads fed by a walk thread: the walk cuts tasks and sends task t straight to reader t mod threads; the
 * batches come back here and are yielded in task order. Nothing of the walk or the reads runs on this thread.
 */
async function* inWorkers(options: SourceBatchOptions, threads: number, setStats: (s: WalkStats) => void, spareChunks: (lane: number) => ArrayBuffer[]): AsyncGenerator<SourceBatch> {
  const channels = Array.from({ length: threads }, () => new MessageChannel());
  const lanes = channels.map((c) => new ReaderLane(options.encode, { tasks: c.port2 }));
  const ports = channels.map((c) => c.port1);
  const walker = new Worker(WALKER_URL, { workerData: { options, threads, tasksAhead: TASKS_AHEAD, ports } satisfies WalkerData, transferList: ports });
  let dispatched = 0;
  let total: number | undefined;
  let walkFailure: Error | undefined;
  let progress: (() => void) | undefined;
  walker.on('message', (m: WalkerMessage) => {
    if (m.type === 'dispatched') dispatched = m.tasks;
    else if (m.type === 'end') {
      setStats(m.stats);
      total = dispatched = m.tasks;
    } else walkFailure ??= threadError(m);
    progress?.();
  });
  walker.on('error', (err) => {
    walkFailure ??= err;
    progress?.();
  });
  walker.on('exit', (code) => {
    if (total === undefined) walkFailure ??= new ShardkitError(ErrorCodes.IO, `the source walk thread stopped (exit code ${code})`);
    progress?.();
  });
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
        if (batch === undefined || batch.task !== task) throw new Error(`source reader ${task % threads} sent task ${batch?.task} where task ${task} was due`);
        yield batch;
        lane.credit(spareChunks(task % threads));
        if (batch.last) break;
      }
      walker.postMessage({ type: 'written', tasks: task + 1 } satisfies WrittenMessage);
    }
  } finally {
    await Promise.all([walker.terminate(), ...lanes.map((l) => l.close())]);
  }
}
