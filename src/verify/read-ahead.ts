/**
 * Sequential reads of one source for verify, with the next read in flight while the bytes of the last are checked.
 */
import type { ByteSource } from '../io/byte-source.js';

type Settled = { bytes: Uint8Array; error?: undefined } | { bytes?: undefined; error: unknown };

/**
 * Reads one source front to back with the next read in flight while the caller checks the bytes of the last: the
 * disk (or the server) and the checks overlap instead of taking turns. At most two reads' bytes are held at once.
 */
export class ReadAhead {
  private ahead: { offset: number; length: number; settled: Promise<Settled> } | undefined;

  constructor(private readonly source: ByteSource) {}

  /** `length` bytes at `offset`, as `source.read` gives them (same errors); then starts reading the next `nextLength`. */
  async read(offset: number, length: number, nextLength: number): Promise<Uint8Array> {
    let got: Settled;
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead !== undefined && ahead.offset === offset && ahead.length === length) got = await ahead.settled;
    else {
      if (ahead !== undefined) await ahead.settled;
      got = await this.settle(offset, length);
    }
    if (got.error !== undefined) throw got.error;
    if (nextLength > 0) this.ahead = { offset: offset + length, length: nextLength, settled: this.settle(offset + length, nextLength) };
    return got.bytes as Uint8Array;
  }

  /** Waits for the read in flight, if any (its result is dropped): before the source is closed. */
  async stop(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead !== undefined) await ahead.settled;
  }

  private settle(offset: number, length: number): Promise<Settled> {
    return this.source.read(offset, length).then(
      (bytes) => ({ bytes }),
      (error: unknown) => ({ error }),
    );
  }
}
