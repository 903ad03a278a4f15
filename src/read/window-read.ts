/**
 * Remote batches read with a window over the rank's next samples (see window-plan.ts): a read that passes through
 * samples of later batches keeps them in a span buffer keyed by position, and the later batch takes them from
 * there instead of fetching them again. The buffer holds only samples of the window, so it stays within the
 * window's bytes (the loader sizes the window from `prefetch`, and counts held bytes as prefetched).
 */
import type { Sample } from '../../formats/sample.js';
import type { Dataset } from './dataset.js';
import { entryOf, type RecordRef } from './record-ref.js';
import { decodeRecord, decodeSpan } from './sample-decode.js';
import { planWindowReads, type WindowPlanOptions, type WindowRequest } from './window-plan.js';

interface Held {
  bytes: Promise<Uint8Array>;
  length: number;
}

/** The rank's upcoming samples (positions, with how often each comes) and the spans held for them. */
export class SpanWindow {
  private readonly counts = new Map<number, number>();
  private readonly held = new Map<number, Held>();
  /** Rank sample index up to which positions have entered `counts`. */
  private windowEnd = 0;
  /** Rank sample index the window starts at: samples before it were read (or skipped, see skip()). */
  private start = 0;
  /** Bytes of spans held now. */
  heldBytes = 0;

  /** `at(i)`: the position of the rank's i-th sample, 0 <= i < length; `windowSamples`: how far ahead to look. */
  constructor(
    private readonly at: (i: number) => number,
    private readonly length: number,
    private readonly windowSamples: number,
  ) {}

  /** Samples [first, first + count) are being read now: the window moves past them (call in batch order). */
  advance(first: number, count: number): void {
    this.passSkipped(first);
    const end = Math.min(this.length, first + count + this.windowSamples);
    for (; this.windowEnd < end; this.windowEnd++) {
      const p = this.at(this.windowEnd);
      this.counts.set(p, (this.counts.get(p) ?? 0) + 1);
    }
    for (let i = first; i < first + count; i++) {
      const p = this.at(i);
      const n = this.counts.get(p) ?? 0;
      if (n <= 1) this.counts.delete(p);
      else this.counts.set(p, n - 1);
    }
    this.start = first + count;
  }

  /** Samples skip() passed over before `first`: those that had entered `counts` leave it. */
  private passSkipped(first: number): void {
    const end = Math.min(first, this.windowEnd);
    for (let i = this.start; i < end; i++) {
      const p = this.at(i);
      const n = this.counts.get(p) ?? 0;
      if (n <= 1) this.counts.delete(p);
      else this.counts.set(p, n - 1);
    }
    if (this.windowEnd < first) this.windowEnd = first;
    this.start = first;
  }

  /**
   * Samples [first, first + count) are read without the window (from the shard cache's copies): spans held for
   * them are dropped, and the window moves past them (at the next advance). Returns the bytes dropped. Call in batch
   * order, as advance.
   */
  skip(first: number, count: number): number {
    let dropped = 0;
    if (this.held.size > 0) for (let i = first; i < first + count; i++) dropped += this.take(this.at(i))?.length ?? 0;
    // the window moves past them when a read next needs it (advance): a fully cached epoch pays nothing per sample
    // here (through advance, two Map updates per sample: 57 ms of a new process's 650 ms first epoch, --cpu-prof)
    return dropped;
  }

  /** Whether a read passing through `position` should keep it: it comes later in the window and is not held yet. */
  readonly upcoming = (position: number): boolean => this.counts.has(position) && !this.held.has(position);

  hold(position: number, bytes: Promise<Uint8Array>, length: number): void {
    bytes.catch(() => undefined); // a failed read fails its own batch; nobody may be left to take this one
    this.held.set(position, { bytes, length });
    this.heldBytes += length;
  }

  take(position: number): Held | undefined {
    const h = this.held.get(position);
    if (h === undefined) return undefined;
    this.held.delete(position);
    this.heldBytes -= h.length;
    return h;
  }
}

export interface WindowBatchOptions extends WindowPlanOptions {
  verify: boolean;
  limit: <T>(fn: () => Promise<T>) => Promise<T>;
}

export interface WindowBatchRead {
  /** Bytes fetched by this batch's reads (gaps included). */
  bytes: number;
  reads: number;
  /** Bytes of later batches' samples those reads put in the buffer. */
  held: number;
  /** Bytes of this batch's samples taken from the buffer. */
  taken: number;
  samples: Promise<Sample[]>;
}

const EMPTY = new Uint8Array(0);

/** Reads the samples `refs` (the rank's samples first .. first + refs.length - 1, located and checked). */
export function readWindowBatch(ds: Dataset, refs: readonly RecordRef[], first: number, at: (i: number) => number, window: SpanWindow, options: WindowBatchOptions): WindowBatchRead {
  const samples = new Array<Sample>(refs.length);
  const waits: Array<Promise<unknown>> = [];
  const toRead: WindowRequest[] = [];
  const requestOf: number[] = [];
  let taken = 0;
  refs.forEach((ref, i) => {
    const position = at(first + i);
    const h = window.take(position);
    if (h === undefined) {
      toRead.push({ shard: ref.shard, offset: ref.offset, length: ref.length, position, leaf: ref.leaf, slot: ref.slot });
      requestOf.push(i);
      return;
    }
    taken += h.length;
    waits.push(h.bytes.then((span) => (samples[i] = decode(ds, ref, span, options.verify))));
  });
  window.advance(first, refs.length);
  const runs = planWindowReads(toRead, window.upcoming, options);
  let bytes = 0;
  let reads = 0;
  let held = 0;
  for (const run of runs) {
    bytes += run.length;
    if (run.length > 0) reads++;
    const read = run.length === 0 ? Promise.resolve(EMPTY) : options.limit(() => ds.readShardRange(run.shard, run.offset, run.length)).then(plain);
    for (const g of run.gapSamples) {
      window.hold(g.position, read.then((b) => b.subarray(g.start, g.start + g.length)), g.length);
      held += g.length;
    }
    waits.push(
      read.then((b) => {
        for (const s of run.slices) {
          const i = requestOf[s.request] as number;
          samples[i] = decode(ds, refs[i] as RecordRef, b.subarray(s.start, s.start + s.length), options.verify);
        }
      }),
    );
  }
  return { bytes, reads, held, taken, samples: Promise.all(waits).then(() => samples) };
}

/** Plain Uint8Array views, not Buffers: Buffer#slice() returns a view, and users copy a member with slice(). */
function plain(b: Uint8Array): Uint8Array {
  return b instanceof Buffer ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b;
}

function decode(ds: Dataset, ref: RecordRef, span: Uint8Array, verify: boolean): Sample {
  const ctx = ds.decodeContext(ref.shard, verify);
  return decodeRecord(ref.leaf, ref.slot, span, verify, ctx.crc32c, undefined) ?? decodeSpan(entryOf(ref), span, ctx);
}
