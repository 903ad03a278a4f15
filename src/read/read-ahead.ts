/**
 * The read-ahead queue both loaders share (Loader, MixtureLoader): batches start ahead of consumption while the bytes
 * fetched but not yet yielded stay under `prefetch`, and are delivered in order, one next() after another.
 *
 * Asking for a batch starts it (if not started) and, when it is read asynchronously, at most one more; the rest of the
 * read-ahead is started from `setImmediate`, one batch per turn of the event loop, so a consumer that awaits other work (GPU, decoding, network)
 * finds the next batches ready, while a tight synchronous consumer pays nothing extra. A batch read synchronously
 * (local shards) is delivered without a promise chain of its own.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/** A batch started ahead of consumption. */
export interface QueuedBatch<S> {
  /** Samples in the batch. */
  count: number;
  /** Bytes counted against prefetch: an estimate until the batch's entries are located, then the reads' size. */
  bytes: number;
  /** View mode: the pooled read buffer the batch's bytes live in, the caller's until it asks for the next batch. */
  slab: Uint8Array | undefined;
  ready: boolean;
  /** The samples, when read synchronously (local batches): delivered without a promise. */
  value: S[] | undefined;
  /** Otherwise the samples when read (or the failure). */
  promise: Promise<S[]> | undefined;
  /** The batch queued after this one. */
  next: QueuedBatch<S> | undefined;
}

/** The counters the queue keeps (part of each loader's stats). */
export interface ReadAheadCounters {
  batches: number;
  samples: number;
  prefetchedBytes: number;
  peakPrefetchedBytes: number;
  /** Batches the consumer asked for before they were ready. */
  stalls: number;
}

/** What a loader gives the queue: how to start a batch, and what to do as batches are delivered and the queue stops. */
export interface BatchSource<S> {
  /**
   * Starts the batch of samples [first, first + batch.count): returns the samples when read synchronously, else their
   * promise. Sets the batch's bytes (ReadAhead.setBytes) and slab as they become known. May throw.
   */
  startBatch(batch: QueuedBatch<S>, first: number): S[] | Promise<S[]>;
  /** False while read-ahead must wait (a batch started earlier whose size is not known yet). */
  mayReadAhead(): boolean;
  /** After a batch is counted as delivered. */
  delivered(batch: QueuedBatch<S>, samples: S[]): void;
  /** View mode: the slab of a batch the caller is done with. */
  giveBack(slab: Uint8Array): void;
  /** Once, when the queue stops (end, error, return()). */
  stopped(): void;
}

export interface ReadAheadOptions {
  batches: number;
  batchSize: number;
  /** Samples in all. */
  length: number;
  /** The most bytes fetched and not yet yielded (the head batch always starts). */
  prefetch: number;
  /** Estimated stored bytes per sample, a batch's size until it is known. */
  bytesPerSample: number;
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/** What work of a stopped loader fails with; nobody receives it (next() returns done once finished). */
export function closedError(): ShardkitError {
  return new ShardkitError(ErrorCodes.CLOSED, 'the loader was closed');
}

export class ReadAhead<S> {
  /**
   * The batches started and not yet delivered, oldest first: a linked list, not an array. A new loader's empty array
   * literal starts with Smi elements, and the first batch pushed into it deoptimized the optimized delivery code of
   * the last epoch ("not a Smi"), as did reading [0] of an empty one ("out of bounds"): each a recompile of the whole
   * per-batch path, inlined, in the first epochs (--trace-deopt).
   */
  private head: QueuedBatch<S> | undefined;
  private tail: QueuedBatch<S> | undefined;
  private queued = 0;
  private nextBatch = 0;
  private stoppedNow = false;
  private fillScheduled = false;
  /** The slab of the batch the caller holds now, given back when it asks for the next one. */
  private heldSlab: Uint8Array | undefined;
  /** next() calls run one after another, so batches are delivered (and counted) in order. */
  private delivery: Promise<unknown> = Promise.resolve();
  /** next() calls whose delivery has not settled: with none, a batch read synchronously is delivered at once. */
  private delivering = 0;
  private readonly delivered = (): void => {
    this.delivering--;
  };

  constructor(
    private readonly source: BatchSource<S>,
    private readonly opts: ReadAheadOptions,
    private readonly counters: ReadAheadCounters,
  ) {}

  /** True once stopped: at the end, after an error, or after stop(). */
  get finished(): boolean {
    return this.stoppedNow;
  }

  /** The next batch; `done` after the last one, after an error, or after stop(). */
  next(): Promise<IteratorResult<S[], undefined>> {
    if (this.delivering === 0) {
      // Nothing before this call is still being delivered: a batch already read is returned without the promise
      // chain (an async function, its await and two reactions per batch: with batchSize 1, per sample).
      const now = this.deliverNow();
      if (now !== undefined) return Promise.resolve(now);
    }
    this.delivering++;
    const result = this.delivery.then(() => this.deliver());
    this.delivery = result.then(this.delivered, this.delivered);
    return result;
  }

  /** Stops: no more batches start; those queued are dropped (their slabs too: reads may still be writing into them). */
  stop(): void {
    if (this.stoppedNow) return;
    this.stoppedNow = true;
    this.head = undefined;
    this.tail = undefined;
    this.queued = 0;
    this.counters.prefetchedBytes = 0;
    // The held slab goes back to the pool: the caller is done with the batch once it stops the loader.
    if (this.heldSlab !== undefined) this.source.giveBack(this.heldSlab);
    this.heldSlab = undefined;
    this.source.stopped();
  }

  /** Sets a batch's bytes counted against prefetch (ignored once stopped). */
  setBytes(batch: QueuedBatch<S>, bytes: number): void {
    if (this.stoppedNow) return;
    this.addPrefetched(bytes - batch.bytes);
    batch.bytes = bytes;
  }

  addPrefetched(delta: number): void {
    const c = this.counters;
    c.prefetchedBytes += delta;
    if (c.prefetchedBytes > c.peakPrefetchedBytes) c.peakPrefetchedBytes = c.prefetchedBytes;
  }

  /**
   * Read-ahead in idle time: one batch per event-loop turn until prefetch is full. The immediate stays ref'd: an
   * unref'd one does not stop the loop from blocking in poll, so it would run only when something else (the
   * consumer's timer or I/O) woke the loop, one batch per consumer step. The chain ends when prefetch is full or
   * the epoch is fetched, so it never keeps a process alive for long.
   */
  scheduleFill(): void {
    if (this.fillScheduled || this.stoppedNow || this.nextBatch >= this.opts.batches || this.counters.prefetchedBytes >= this.opts.prefetch) return;
    this.fillScheduled = true;
    setImmediate(() => {
      this.fillScheduled = false;
      const before = this.nextBatch;
      this.fill(this.queued + 1);
      if (this.nextBatch > before) this.scheduleFill();
    });
  }

  /**
   * deliver() without a promise, when its result is known now: the end, or a head batch read synchronously.
   * Undefined when the head batch is still being read (or failed): deliver() then takes it from there.
   */
  private deliverNow(): IteratorResult<S[], undefined> | undefined {
    this.giveBackHeldSlab();
    if (this.stoppedNow) return DONE;
    // Only the head: a batch read synchronously gains nothing from a second one read now, in the same call, while
    // holding it would keep a third batch of buffers alive across the consumer's step (the batch it holds, this one,
    // the next): enough, with large batches, for V8 to promote them to the old generation and run a major GC every
    // epoch (bench/loader-callgrind.mjs, batch 256 in key order). Idle-time read-ahead (scheduleFill) still runs.
    this.fill(1);
    const head = this.head;
    if (head === undefined) {
      this.stop();
      return DONE;
    }
    if (head.value === undefined) return undefined;
    this.dequeue(head);
    this.scheduleFill();
    return this.yielded(head, head.value);
  }

  private async deliver(): Promise<IteratorResult<S[], undefined>> {
    this.giveBackHeldSlab();
    if (this.stoppedNow) return DONE;
    this.fill(2);
    const head = this.head;
    if (head === undefined) {
      this.stop();
      return DONE;
    }
    this.dequeue(head);
    if (!head.ready) this.counters.stalls++;
    this.scheduleFill();
    if (head.value !== undefined) return this.yielded(head, head.value);
    let batch: S[];
    try {
      batch = await (head.promise as Promise<S[]>);
    } catch (err) {
      if (this.stoppedNow) return DONE; // stopped while this batch was in flight: its failure (CLOSED) reaches nobody
      this.stop();
      throw err;
    }
    if (this.stoppedNow) return DONE; // stopped while this batch was in flight
    return this.yielded(head, batch);
  }

  private giveBackHeldSlab(): void {
    if (this.heldSlab !== undefined) {
      this.source.giveBack(this.heldSlab);
      this.heldSlab = undefined;
    }
  }

  /** Counts `head` as yielded; its slab is the caller's until the next batch is asked for. */
  private yielded(head: QueuedBatch<S>, batch: S[]): IteratorYieldResult<S[]> {
    this.addPrefetched(-head.bytes);
    this.counters.batches++;
    this.counters.samples += head.count;
    this.heldSlab = head.slab;
    this.source.delivered(head, batch);
    return { done: false, value: batch };
  }

  /**
   * Starts batches until `depth` are queued: the head always; the others while under prefetch and while the source
   * allows read-ahead (a remote batch's size is an estimate until its entries are known, and real reads also fetch
   * tar headers and the holes of coalesced ranges: started on estimates alone, read-ahead over tiny samples once ran
   * to 600x the prefetch bound).
   */
  private fill(depth: number): void {
    while (
      !this.stoppedNow &&
      this.nextBatch < this.opts.batches &&
      (this.queued === 0 || (this.queued < depth && this.source.mayReadAhead() && this.counters.prefetchedBytes < this.opts.prefetch))
    ) {
      const batch = this.start(this.nextBatch++);
      if (this.tail === undefined) this.head = batch;
      else this.tail.next = batch;
      this.tail = batch;
      this.queued++;
    }
  }

  /** Takes `head` (the head batch) off the queue. */
  private dequeue(head: QueuedBatch<S>): void {
    this.head = head.next;
    if (this.head === undefined) this.tail = undefined;
    head.next = undefined;
    this.queued--;
  }

  private start(index: number): QueuedBatch<S> {
    const first = index * this.opts.batchSize;
    const count = Math.min(this.opts.batchSize, this.opts.length - first);
    const batch: QueuedBatch<S> = { count, bytes: 0, slab: undefined, ready: false, value: undefined, promise: undefined, next: undefined };
    this.setBytes(batch, Math.round(count * this.opts.bytesPerSample));
    let promise: Promise<S[]>;
    try {
      const result = this.source.startBatch(batch, first);
      if (Array.isArray(result)) {
        // read synchronously: ready now, and delivered as it is (no promise made for it)
        batch.ready = true;
        batch.value = result;
        return batch;
      }
      promise = result;
    } catch (err) {
      promise = Promise.reject(err);
    }
    promise.then(
      () => {
        batch.ready = true;
      },
      () => {
        batch.ready = true; // handled here so a failed read-ahead is not an unhandled rejection; deliver() rethrows
      },
    );
    batch.promise = promise;
    return batch;
  }
}
