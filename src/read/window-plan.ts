/**
 * Window read planning for remote epochs: "read each byte once".
 *
 * Coalescing one batch's spans across gaps (fetch-plan.ts) reads the bytes in the gaps; in a shuffled order those
 * bytes belong to samples of other batches, which read them again later. An epoch then fetched 4-7x the dataset
 * (issue #25). Here a gap is read through only when its bytes are, for the most part, samples the rank reads
 * soon (`upcoming`, the next samples of its plan): those samples are cut out of the read and kept (a span
 * buffer keyed by position) until their batch takes them, so they are not fetched again.
 *
 * The byte bound. A shard's bytes are cut into extents, one per record: from its span's first byte to the next
 * record's first byte (the span, then the tar padding and the next header). A read is made of extents of its own
 * batch's samples and of gap extents. A gap extent of an upcoming sample is served from the buffer later: its
 * bytes are fetched once. Any other gap extent is waste: its bytes will be fetched again. A run joins a gap only
 * while waste <= maxWaste x (the run's other bytes). Every byte outside waste is fetched once in the epoch, so an
 * epoch fetches at most (1 + maxWaste) x the shards' bytes (plus repeats of padded samples).
 */
import { RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import type { CoalesceOptions } from './fetch-plan.js';

/** One span to fetch, with where its record is: the records between two spans of a leaf are the gap's samples. */
export interface WindowRequest {
  shard: number;
  offset: number;
  length: number;
  /** The sample's position (key order). */
  position: number;
  leaf: LeafPage;
  slot: number;
}

/** A sample of a later batch that a run reads through: `length` bytes at `start` from the run's first byte. */
export interface GapSample {
  position: number;
  start: number;
  length: number;
}

export interface WindowRun {
  shard: number;
  offset: number;
  length: number;
  /** The batch's requests: index into the requests array, and where the span sits in the run. */
  slices: Array<{ request: number; start: number; length: number }>;
  /** Upcoming samples read through, to keep for their batch. */
  gapSamples: GapSample[];
  /** Bytes of this run that will be fetched again (gap records nobody takes from the buffer). */
  waste: number;
}

export interface WindowPlanOptions extends CoalesceOptions {
  /** Largest waste per byte of a run's other bytes (see the byte bound above). */
  maxWaste: number;
}

/**
 * Waste allowed per byte of a read: an epoch then fetches at most 1.1x the dataset with 'none' and 'block' shuffles,
 * 1.5x with 'full', as issue #25 asks. More waste buys fewer requests: with 0.5 instead of 0.1, the nginx test epoch
 * (3,000 samples, 1 MiB shards) took 881 requests instead of 1,090 with 'full' (0.95x the dataset's bytes instead of
 * 0.90x), 492 instead of 642 with 'block'; 'block' keeps 0.1 because its bound is 1.1x.
 */
export const DEFAULT_MAX_WASTE = 0.1;
export const FULL_SHUFFLE_MAX_WASTE = 0.5;

/**
 * Plans the reads of one batch. `upcoming(position)` tells whether a sample is read by this rank soon (within the
 * window the caller keeps in memory) and not yet held. Runs come out by (shard, offset); each request is in exactly
 * one run; a span is never split; spans that overlap a run (padding repeats) join it.
 */
export function planWindowReads(requests: readonly WindowRequest[], upcoming: (position: number) => boolean, options: WindowPlanOptions): WindowRun[] {
  const order = requests.map((_, i) => i).sort((i, j) => {
    const a = requests[i] as WindowRequest;
    const b = requests[j] as WindowRequest;
    return a.shard - b.shard || a.offset - b.offset || b.length - a.length || i - j;
  });
  const runs: WindowRun[] = [];
  let run: WindowRun | undefined;
  let runEnd = 0;
  let last: WindowRequest | undefined;
  for (const i of order) {
    const r = requests[i] as WindowRequest;
    const end = r.offset + r.length;
    let gap: GapAccount | undefined;
    if (run !== undefined && last !== undefined && run.shard === r.shard) {
      if (r.offset < runEnd) gap = { waste: 0, samples: [] };
      else if (end - run.offset <= options.maxReadBytes) {
        // gapBytes bounds the bytes read in vain, not the gap: samples of the window in it are fetched now instead of
        // later, which costs no byte and saves their requests.
        const g = accountGap(last, r, upcoming);
        const other = run.length - run.waste + (r.offset - runEnd - g.waste) + r.length;
        if (g.waste <= options.gapBytes && run.waste + g.waste <= options.maxWaste * other) gap = g;
      }
    }
    if (run === undefined || gap === undefined) {
      run = { shard: r.shard, offset: r.offset, length: r.length, slices: [{ request: i, start: 0, length: r.length }], gapSamples: [], waste: 0 };
      runs.push(run);
      runEnd = end;
      last = r;
      continue;
    }
    for (const s of gap.samples) run.gapSamples.push({ position: s.position, start: s.offset - run.offset, length: s.length });
    run.waste += gap.waste;
    if (end > runEnd) {
      runEnd = end;
      run.length = runEnd - run.offset;
      last = r;
    }
    run.slices.push({ request: i, start: r.offset - run.offset, length: r.length });
  }
  return runs;
}

interface GapAccount {
  /** Bytes of the gap that are not upcoming samples' extents. */
  waste: number;
  samples: Array<{ position: number; offset: number; length: number }>;
}

/**
 * The gap between `a`'s span and `b`'s: `a`'s tail (tar padding, the next header: bytes no span holds, so never
 * fetched again), then the extents of the records between them in key order. Those are known only when both are
 * in one leaf and the records lie in order inside the gap; otherwise the whole gap counts as waste, unless the two
 * are neighbours (then the gap is `a`'s tail).
 */
function accountGap(a: WindowRequest, b: WindowRequest, upcoming: (position: number) => boolean): GapAccount {
  const gapStart = a.offset + a.length;
  const gapBytes = b.offset - gapStart;
  if (b.position === a.position + 1) return { waste: 0, samples: [] };
  const unknown = { waste: gapBytes, samples: [] };
  if (a.leaf !== b.leaf || b.slot - a.slot !== b.position - a.position) return unknown;
  const rows = a.leaf.rows;
  const offsetOf = (slot: number): number => (slot === b.slot ? b.offset : (rows[slot * RECORD_COLUMNS + RecordColumn.offset] as number));
  let waste = 0;
  let prevEnd = gapStart;
  const samples: GapAccount['samples'] = [];
  for (let slot = a.slot + 1; slot < b.slot; slot++) {
    const r = slot * RECORD_COLUMNS;
    const offset = offsetOf(slot);
    const length = rows[r + RecordColumn.length] as number;
    const next = offsetOf(slot + 1);
    if ((rows[r + RecordColumn.shard] as number) !== a.shard || offset < prevEnd || offset + length > next) return unknown;
    prevEnd = next;
    const position = a.position + (slot - a.slot);
    if (upcoming(position)) samples.push({ position, offset, length });
    else waste += next - offset;
  }
  return { waste, samples };
}
