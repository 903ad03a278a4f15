/**
 * Read coalescing: turns the sample spans a loader needs together (one batch) into as few positional reads as
 * possible. Spans in one shard whose gap is at most `gapBytes` share a read, as long as the read stays within
 * `maxReadBytes`; every span is then a slice of its read's bytes. Coalescing only decides which bytes to read
 * at once: the slice of a read equals what a read of the span alone returns (property-tested), and a span is
 * never split.
 *
 * Why gaps are worth reading: one more request costs a round trip on http (milliseconds) and a system call on a
 * local file (~1-3 us, about the cost of copying 10-20 KiB from the page cache), while the gap bytes between
 * neighbouring samples are usually a tar header or nothing at all.
 */

/** One span to fetch: `length` bytes at `offset` in shard `shard`. */
export interface SpanRequest {
  shard: number;
  offset: number;
  length: number;
}

/** Where one request's bytes sit inside a read. */
export interface SpanSlice {
  /** Index of the request in the array given to {@link planReads}. */
  request: number;
  /** Offset of the span's first byte from the start of the read. */
  start: number;
  length: number;
}

/** One positional read that serves one or more requests. */
export interface ReadRun {
  shard: number;
  offset: number;
  length: number;
  slices: SpanSlice[];
}

export interface CoalesceOptions {
  /** Largest hole between two spans that may be read through. */
  gapBytes: number;
  /** Largest read made by joining spans; a single span larger than this is read alone. 0 never joins spans. */
  maxReadBytes: number;
}

/** Over http(s), read through holes of up to 64 KiB (a round trip costs far more than 64 KiB of bandwidth). */
export const DEFAULT_COALESCE_GAP_BYTES = 64 * 1024;
/**
 * Locally, join only neighbours: spans a tar header and its padding apart (at most 1023 bytes). Copying a larger hole
 * out of the page cache costs more than the read it saves: a shuffled epoch of 1-10 KiB samples ran 2-6% faster with
 * no hole read than with 64 KiB ones, 25% in view mode (memory-mapped shards), and 5% faster with pread as well.
 */
export const DEFAULT_LOCAL_COALESCE_GAP_BYTES = 1024;
/** Join spans into reads of up to 1 MiB: large enough to amortise a request, small enough to keep memory flat. */
export const DEFAULT_MAX_READ_BYTES = 1024 * 1024;

/**
 * Plans the reads for `requests`. Runs come out ordered by (shard, offset); each request appears in exactly one
 * run's slices. A span that starts inside a run (a padded epoch can repeat a sample) always joins it, so runs of
 * one shard never overlap and exceed maxReadBytes only through such overlap. Empty spans get a slice of length 0;
 * a run of length 0 needs no read. O(k log k) for k requests.
 */
export function planReads(requests: readonly SpanRequest[], options: CoalesceOptions): ReadRun[] {
  const order = sortRequests(requests);
  const runs: ReadRun[] = [];
  let run: ReadRun | undefined;
  let runEnd = 0;
  for (let n = 0; n < requests.length; n++) {
    const i = order[n] as number;
    const offset = keys.offset[i] as number;
    const length = keys.length[i] as number;
    const end = offset + length;
    const joinable =
      run !== undefined &&
      run.shard === keys.shard[i] &&
      // A span starting inside the run always joins it (whatever maxReadBytes): no byte is read twice.
      (offset < runEnd || (offset - runEnd <= options.gapBytes && end - run.offset <= options.maxReadBytes));
    if (!joinable || run === undefined) {
      // most runs of a shuffled epoch hold one span: a one-element literal, not an empty array grown by push (which
      // allocates room for 17)
      run = { shard: keys.shard[i] as number, offset, length, slices: [{ request: i, start: 0, length }] };
      runs.push(run);
      runEnd = end;
      continue;
    }
    if (end > runEnd) {
      runEnd = end;
      run.length = runEnd - run.offset;
    }
    run.slices.push({ request: i, start: offset - run.offset, length });
  }
  return runs;
}

/**
 * Sort scratch, reused across calls (a loader plans one batch at a time, synchronously): the requests' fields in
 * typed arrays and two index buffers for a bottom-up merge sort. Sorting indices with Array#sort and a comparator
 * that reads the request objects cost about twice as much per batch (0.4 against 0.2 us a sample, 32-sample
 * batches of a shuffled epoch), a sizeable share of a 4 us read from the page cache.
 */
const keys = { shard: new Float64Array(64), offset: new Float64Array(64), length: new Float64Array(64), a: new Int32Array(64), b: new Int32Array(64) };

/** Whether request i comes before request j: by shard, then offset, then longest first, then request order. */
function before(i: number, j: number): boolean {
  const { shard, offset, length } = keys;
  if (shard[i] !== shard[j]) return (shard[i] as number) < (shard[j] as number);
  if (offset[i] !== offset[j]) return (offset[i] as number) < (offset[j] as number);
  // Longest first at one offset, so repeats of a span (and shorter spans at its start) fall inside it.
  if (length[i] !== length[j]) return (length[i] as number) > (length[j] as number);
  return i < j;
}

/** The request indices in planning order (a view of the scratch, valid until the next call). */
function sortRequests(requests: readonly SpanRequest[]): Int32Array {
  const k = requests.length;
  if (keys.a.length < k) {
    const n = Math.max(k, 2 * keys.a.length);
    keys.shard = new Float64Array(n);
    keys.offset = new Float64Array(n);
    keys.length = new Float64Array(n);
    keys.a = new Int32Array(n);
    keys.b = new Int32Array(n);
  }
  let inOrder = true;
  for (let i = 0; i < k; i++) {
    const r = requests[i] as SpanRequest;
    keys.shard[i] = r.shard;
    keys.offset[i] = r.offset;
    keys.length[i] = r.length;
    keys.a[i] = i;
    if (inOrder && i > 0 && !before(i - 1, i)) inOrder = false;
  }
  let src = keys.a;
  let dst = keys.b;
  if (inOrder) return src; // sequential epochs and block-local batches: already in order
  for (let width = 1; width < k; width *= 2) {
    for (let lo = 0; lo < k; lo += 2 * width) {
      const mid = Math.min(lo + width, k);
      const hi = Math.min(lo + 2 * width, k);
      let i = lo;
      let j = mid;
      let out = lo;
      while (i < mid && j < hi) dst[out++] = before(src[j] as number, src[i] as number) ? (src[j++] as number) : (src[i++] as number);
      while (i < mid) dst[out++] = src[i++] as number;
      while (j < hi) dst[out++] = src[j++] as number;
    }
    const merged = dst;
    dst = src;
    src = merged;
  }
  return src;
}
