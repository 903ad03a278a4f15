/**
 * Sequential reads of one source for verify, with the next read in flight while the bytes of the last are checked.
 */
import type { ByteSource } from '../io/byte-source.js';

/** A read's outcome, with the buffer it was read into when it is one of this reader's (to be used again). */
type Settled = ({ bytes: Uint8Array; error?: undefined } | { bytes?: undefined; error: unknown }) & { buffer?: Uint8Array | undefined };

/**
 * Reads one source front to back with the next read in flight while the caller checks the bytes of the last: the
 * disk (or the server) and the checks overlap instead of taking turns. At most two reads' bytes are held at once.
 *
 * Reads go into two buffers that take turns (a local file reads into them; other sources may return new memory), so
 * the bytes {@link read} returns are valid until the next call only: a fresh 4 MiB buffer per read cost a page fault
 * per 4 KiB written and garbage for the collector (verify read each shard byte into new memory once), and doubled
 * verify's peak RSS.
 */
export class ReadAhead {
  private ahead: { offset: number; length: number; settled: Promise<Settled> } | undefined;
  /** The buffer the caller holds (returned by the last read), and the one free for the read after the next. */
  private held: Uint8Array | undefined;
  private spare: Uint8Array | undefined;

  constructor(private readonly source: ByteSource) {}

  /**
   * `length` bytes at `offset`, as `source.read` gives them (same errors), valid until the next call; then starts
   * reading the next `nextLength`.
   */
  async read(offset: number, length: number, nextLength: number): Promise<Uint8Array> {
    // the bytes returned last are no longer the caller's: their buffer takes the next read
    this.release(this.held);
    this.held = undefined;
    let got: Settled;
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead !== undefined && ahead.offset === offset && ahead.length === length) got = await ahead.settled;
    else {
      if (ahead !== undefined) this.release((await ahead.settled).buffer);
      got = await this.settle(offset, length);
    }
    if (got.error !== undefined) {
      this.release(got.buffer);
      throw got.error;
    }
    this.held = got.buffer;
    if (nextLength > 0) this.ahead = { offset: offset + length, length: nextLength, settled: this.settle(offset + length, nextLength) };
    return got.bytes as Uint8Array;
  }

  /** Waits for the read in flight, if any (its result is dropped): before the source is closed. */
  async stop(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead !== undefined) this.release((await ahead.settled).buffer);
  }

  private settle(offset: number, length: number): Promise<Settled> {
    let buffer = this.spare;
    this.spare = undefined;
    // a Uint8Array, not a Buffer: callers keep bytes with slice(), which copies a Uint8Array but not a Buffer
    if (buffer === undefined || buffer.length < length) buffer = new Uint8Array(length);
    const owned = buffer;
    return this.source.read(offset, length, owned).then(
      (bytes) => ({ bytes, buffer: owned }),
      (error: unknown) => ({ error, buffer: owned }),
    );
  }

  /** Keeps the larger of `buffer` and the spare for the next read. */
  private release(buffer: Uint8Array | undefined): void {
    if (buffer !== undefined && (this.spare === undefined || this.spare.length < buffer.length)) this.spare = buffer;
  }
}
