/**
 * Operation counters shared by byte sources, handle pools and loaders, so the bench and the counting tests can
 * report exact numbers ("10,000 reads, 64 opens") instead of timings alone. Plain mutable numbers: incrementing a
 * field is the whole cost, so sources count unconditionally.
 *
 * Who counts what:
 * - `opens`/`closes`: a FileSource when it opens/closes its file descriptor (an HttpSource holds none).
 * - `reads`/`bytesRead`: one per positional read request, and the bytes it returned: a pread, an HTTP range
 *   request, or a copy out of a memory-mapped shard (see FileSourceOptions.mmap).
 * - `mappedReads`: how many of those `reads` were copies out of a memory map. They make no system call (a read
 *   served from a warm page cache costs a memcpy), so system calls for reads = `reads - mappedReads`; on a cold
 *   cache each one still waits for the storage device, through page faults instead of pread.
 * - `stats`: fstat/stat calls (FileSource.size, readAll of a local file).
 * - `httpRequests`: every HTTP request sent, retries included; `retries`: requests sent again after a failure.
 */
export class IoStats {
  opens = 0;
  closes = 0;
  reads = 0;
  mappedReads = 0;
  bytesRead = 0;
  stats = 0;
  httpRequests = 0;
  retries = 0;

  /** A plain JSON copy of the counters, for reports and for diffing before/after. */
  snapshot(): IoStatsSnapshot {
    return {
      opens: this.opens,
      closes: this.closes,
      reads: this.reads,
      mappedReads: this.mappedReads,
      bytesRead: this.bytesRead,
      stats: this.stats,
      httpRequests: this.httpRequests,
      retries: this.retries,
    };
  }

  /** Sets every counter back to 0 (between bench epochs). */
  reset(): void {
    this.opens = 0;
    this.closes = 0;
    this.reads = 0;
    this.mappedReads = 0;
    this.bytesRead = 0;
    this.stats = 0;
    this.httpRequests = 0;
    this.retries = 0;
  }
}

export interface IoStatsSnapshot {
  opens: number;
  closes: number;
  reads: number;
  mappedReads: number;
  bytesRead: number;
  stats: number;
  httpRequests: number;
  retries: number;
}
