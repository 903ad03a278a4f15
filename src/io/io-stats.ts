/**
 * Operation counters shared by byte sources, handle pools and loaders, so the bench and the counting tests can
 * report exact numbers ("10,000 reads, 64 opens") instead of timings alone. Plain mutable numbers: incrementing a
 * field is the whole cost, so sources count unconditionally.
 *
 * Who counts what:
 * - `opens`/`closes`: a FileSource when it opens/closes its file descriptor (an HttpSource holds none).
 * - `reads`/`bytesRead`: one per positional read that reached the OS or the network, and the bytes it returned.
 * - `stats`: fstat/stat calls (FileSource.size, readAll of a local file).
 * - `httpRequests`: every HTTP request sent, retries included; `retries`: requests sent again after a failure.
 */
export class IoStats {
  opens = 0;
  closes = 0;
  reads = 0;
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
  bytesRead: number;
  stats: number;
  httpRequests: number;
  retries: number;
}
