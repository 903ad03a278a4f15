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

/** Read through holes of up to 64 KiB (a remote round trip costs far more than 64 KiB of bandwidth). */
export const DEFAULT_COALESCE_GAP_BYTES = 64 * 1024;
/** Join spans into reads of up to 1 MiB: large enough to amortise a request, small enough to keep memory flat. */
export const DEFAULT_MAX_READ_BYTES = 1024 * 1024;

/**
 * Plans the reads for `requests`. Runs come out ordered by (shard, offset); each request appears in exactly one
 * run's slices. A span that starts inside a run (a padded epoch can repeat a sample) always joins it, so runs of
 * one shard never overlap and exceed maxReadBytes only through such overlap. Empty spans get a slice of length 0;
 * a run of length 0 needs no read. O(k log k) for k requests.
 */
export function planReads(requests: readonly SpanRequest[], options: CoalesceOptions): ReadRun[] {
  const order = requests.map((_, i) => i);
  order.sort((a, b) => {
    const x = requests[a] as SpanRequest;
    const y = requests[b] as SpanRequest;
    // Longest first at one offset, so repeats of a span (and shorter spans at its start) fall inside it.
    return x.shard - y.shard || x.offset - y.offset || y.length - x.length;
  });
  const runs: ReadRun[] = [];
  let run: ReadRun | undefined;
  let runEnd = 0;
  for (const i of order) {
    const r = requests[i] as SpanRequest;
    const end = r.offset + r.length;
    const joinable =
      run !== undefined &&
      run.shard === r.shard &&
      // A span starting inside the run always joins it (whatever maxReadBytes): no byte is read twice.
      (r.offset < runEnd || (r.offset - runEnd <= options.gapBytes && end - run.offset <= options.maxReadBytes));
    if (!joinable || run === undefined) {
      run = { shard: r.shard, offset: r.offset, length: r.length, slices: [] };
      runs.push(run);
      runEnd = end;
    } else if (end > runEnd) {
      runEnd = end;
      run.length = runEnd - run.offset;
    }
    run.slices.push({ request: i, start: r.offset - run.offset, length: r.length });
  }
  return runs;
}
