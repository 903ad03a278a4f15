/**
 * Runs the reads of a pack's source in threads. The calling thread walks the source, cuts the samples into tasks and
 * hands them round to the reader threads (source-worker.ts), which read and encode them ahead of the writer; the
 * batches come back to the calling thread in task order. So on Lots Of Small Files the open/fstat/read/close of the
 * next files overlap the writer's shard writes and index work instead of adding to them, and N readers keep N reads
 * in flight on a cold disk. Batches carry the bytes in transferred ArrayBuffers (no copy between threads) that the
 * consumer hands back for reuse; credits bound the batches in flight, and tasks-ahead the work handed out, so
 * memory stays at a few batches per reader whatever the dataset size.
 *
 * How many readers: a fixed number, or `auto`: `initial` to start with (reader-start.ts: two on two cores or more),
 * and more up to `max` once the reads are seen coming from storage (the process's block reads) or waiting (far more
 * wall time than thread CPU time) for GROW_WINDOWS windows of reading in a row. From the page cache one reader is
 * the critical path and two took 0.96x its time on 2 cores (100k small files; an earlier build, with more work on
 * the main thread, measured two 10-14 % slower); from a disk two keep two reads in flight (1.35x faster than one).
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
/** `auto` judges whether to add a reader each time the readers' reads took this much more wall time... */
const GROW_AFTER_MS = 100;
/**
 * ...and adds one when the process read from storage, or the reads' thread CPU time was under this share of their
 * wall time. Measured on 2 cores, 100k small files: 0.48-0.97 from the page cache (the low end when another thread
 * takes the core), 0.41-0.7 from an SSD, whose reads the block count shows instead.
 */
const IO_BOUND_CPU_SHARE = 0.3;

/** What the readers had read when auto judged whether to add one: all counts since the pack started. */
export interface ReadingSeen {
  /** Wall and thread CPU milliseconds in reads (CPU < 0: not measured). */
  wallMs: number;
  cpuMs: number;
  /** 512-byte blocks the process read from storage (process.resourceUsage().fsRead). */
  blocks: number;
  samples: number;
}

/**
 * Whether auto should add a reader, from what was read between two judgements: yes when the reads came from storage
 * (a 512-byte block or more per sample), or waited (their thread CPU time under IO_BOUND_CPU_SHARE of their wall
 * time: a network file system, which block counts do not see), or were not measured (no telling: as many readers as
 * allowed, as before auto).
 */
export function addReader(before: ReadingSeen, now: ReadingSeen): boolean {
  if (now.cpuMs < 0) return true;
  const samples = now.samples - before.samples;
  const fromStorage = samples > 0 && now.blocks - before.blocks >= samples;
  return fromStorage || now.cpuMs - before.cpuMs < IO_BOUND_CPU_SHARE * (now.wallMs - before.wallMs);
}

/**
 * Windows of reading in a row that must call for another reader ({@link addReader}) before auto adds one: a lone
 * slow window is a stall (a burst of steal time on a VM, say), not a disk, and a reader added for it stays. Seen: a
 * 1M-file pack from the page cache had one window at 29 % CPU, added a reader, and took 12.7 s instead of 6.
 */
export const GROW_WINDOWS = 3;

/** auto's judgement over successive windows of reading (see {@link addReader} and {@link GROW_WINDOWS}). */
export class ReaderGrowth {
  private streak = 0;

  constructor(public last: ReadingSeen) {}

  /** Judges the window since the last call (or the start): true when a reader should be added now. */
  judge(now: ReadingSeen): boolean {
    const add = addReader(this.last, now);
    this.last = now;
    // reads that are not measured: no telling, as many readers as allowed at once
    if (now.cpuMs < 0) return add;
    this.streak = add ? this.streak + 1 : 0;
    if (this.streak < GROW_WINDOWS) return false;
    this.streak = 0;
    return true;
  }
}

/** A sum of CPU milliseconds where -1 means "not measured": one unmeasured term makes the sum unmeasured. */
function addCpuMs(a: number, b: number): number {
  return a < 0 || b < 0 ? -1 : a + b;
}

/** Reader threads: a fixed count, or `auto` (see the top of this file), which grows from `initial` to `max`. */
export type ReaderThreads = number | { auto: true; initial: number; max: number };

export interface SourceBatches extends AsyncIterable<SourceBatch> {
  /** The walk's counters; complete once the iteration has ended. */
  readonly stats: WalkStats;
  /** Reader threads running (or that ran, once the iteration has ended); 0 reads in the calling thread. */
  readonly readers: number;
  /** Gives a batch's buffers back for reuse once none of its bytes are needed any more (optional). */
  recycle(batch: SourceBatch): void;
}

/**
 * Opens the batches of a source. The walk runs in this thread and cuts the samples into tasks; reader threads read
 * and encode the tasks, and their batches come back here in task order. 0 threads reads in this thread.
 */
export function openSourceBatches(options: SourceBatchOptions, threads: ReaderThreads): SourceBatches {
  // batch buffers are interchangeable: any reader may reuse any of them
  const spare: ArrayBuffer[] = [];
  const result = {
    stats: undefined as unknown as WalkStats,
    readers: 0,
    recycle: (batch: SourceBatch): void => {
      for (const c of batch.chunks) if (c.byteLength === BATCH_BYTES && spare.length < BATCHES_AHEAD) spare.push(c);
    },
    [Symbol.asyncIterator]: (): AsyncIterator<SourceBatch> => {
      const setStats = (s: WalkStats): void => {
        result.stats = s;
      };
      if (threads === 0) return readTasks(sourceTasks(options, setStats), options.encode, () => spare.pop(), options.verifySource === true)[Symbol.asyncIterator]();
      const setReaders = (n: number): void => {
        result.readers = n;
      };
      return inWorkers(options, threads, setStats, setReaders, () => spare.splice(0))[Symbol.asyncIterator]();
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
  /** Wall and thread CPU milliseconds of the reads behind the batches received (CPU < 0: not measured). */
  readonly reading = { wallMs: 0, cpuMs: 0 };

  constructor(encode: EncodeOptions | undefined, verifySource: boolean) {
    this.worker = startReader();
    this.send({ type: 'init', encode, ahead: BATCHES_AHEAD, verifySource });
    this.worker.on('message', (m: WorkerMessage) => {
      if (m.type === 'batch') {
        this.queue.push(m.batch);
        this.reading.wallMs += m.reading.wallMs;
        this.reading.cpuMs = addCpuMs(this.reading.cpuMs, m.reading.cpuMs);
      } else this.failure ??= threadError(m);
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
 * Reader threads fed by this thread's walk: the walk cuts tasks and hands them round to the readers, staying at most
 * TASKS_AHEAD tasks per reader beyond those written; the batches come back here and are yielded in task order. Each
 * reader gets its tasks in increasing order, so the next batch of a reader belongs to the earliest of its tasks not
 * yet written. The walk is light next to the reads (a listing per directory, a few strings per file) and this thread
 * waits on the readers much of the time, so it walks in between instead of a thread of its own taking a core.
 */
async function* inWorkers(
  options: SourceBatchOptions,
  threads: ReaderThreads,
  setStats: (s: WalkStats) => void,
  setReaders: (n: number) => void,
  spareChunks: () => ArrayBuffer[],
): AsyncGenerator<SourceBatch> {
  const max = typeof threads === 'number' ? threads : threads.max;
  const lanes = Array.from({ length: typeof threads === 'number' ? threads : threads.initial }, () => new ReaderLane(options.encode, options.verifySource === true));
  setReaders(lanes.length);
  /** The lane of every task handed out and not yet written. */
  const laneOf = new Map<number, ReaderLane>();
  let dispatched = 0;
  let total: number | undefined;
  let walkFailure: unknown;
  let written = 0;
  let stopped = false;
  let progress: (() => void) | undefined;
  let resumeWalk: (() => void) | undefined;
  let walkDone = false;
  /** Samples received so far; what had been read when maybeGrow last judged. */
  let samples = 0;
  const growth = new ReaderGrowth({ wallMs: 0, cpuMs: 0, blocks: process.resourceUsage().fsRead, samples: 0 });
  /** auto: one more reader when {@link ReaderGrowth} says so, judged each GROW_AFTER_MS of reading. */
  const maybeGrow = (): void => {
    if (lanes.length >= max || walkDone) return;
    const now: ReadingSeen = { wallMs: 0, cpuMs: 0, blocks: 0, samples };
    for (const lane of lanes) {
      now.wallMs += lane.reading.wallMs;
      now.cpuMs = addCpuMs(now.cpuMs, lane.reading.cpuMs);
    }
    if (now.cpuMs >= 0 && now.wallMs - growth.last.wallMs < GROW_AFTER_MS) return;
    now.blocks = process.resourceUsage().fsRead;
    if (!growth.judge(now)) return;
    lanes.push(new ReaderLane(options.encode, options.verifySource === true));
    setReaders(lanes.length);
    resumeWalk?.();
  };
  const walk = (async () => {
    try {
      for await (const task of sourceTasks(options, setStats)) {
        while (task.task >= written + TASKS_AHEAD * lanes.length && !stopped) {
          await new Promise<void>((resolve) => {
            resumeWalk = resolve;
          });
          resumeWalk = undefined;
        }
        if (stopped) return;
        const lane = lanes[task.task % lanes.length] as ReaderLane;
        laneOf.set(task.task, lane);
        lane.send({ type: 'task', task });
        dispatched = task.task + 1;
        progress?.();
      }
      total = dispatched;
    } catch (err) {
      walkFailure = err;
    } finally {
      walkDone = true;
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
      const lane = laneOf.get(task) as ReaderLane;
      for (;;) {
        const batch = await lane.next();
        if (batch.task !== task) throw new Error(`a source reader sent task ${batch.task} where task ${task} was due`);
        samples += batch.count;
        yield batch;
        lane.credit(spareChunks());
        if (batch.last) break;
      }
      laneOf.delete(task);
      written = task + 1;
      if (typeof threads !== 'number') maybeGrow();
      resumeWalk?.();
    }
  } finally {
    stopped = true;
    resumeWalk?.();
    await walk;
    await Promise.all(lanes.map((l) => l.close()));
  }
}
