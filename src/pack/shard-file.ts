/**
 * Writes one shard file under a temporary name with large buffered writes, computing as it goes the CRC32C of the
 * whole file and the fingerprint (CRC32C of its first FINGERPRINT_BYTES); `commit()` renames it into place.
 * {@link ShardFile.mark} and {@link ShardFile.rewind} take back a sample written piece by piece (a streamed member
 * whose source changed under the read): the file is cut back, the checksums restored.
 */
import fs from 'node:fs';
import { crc32c } from '../../formats/checksum.js';
import { FINGERPRINT_BYTES } from '../../formats/index-layout.js';
import { fsCall } from './fs-errors.js';
import { createFresh } from './replace-file.js';
import { MAX_IO_CALL_BYTES } from '../io/io-options.js';

const WRITE_BUFFER_BYTES = 4 << 20;
/** A run of caller bytes at least this long is written from where it lies instead of copied into the buffer. */
const DIRECT_WRITE_BYTES = 64 << 10;

/** Where a shard file stood: see {@link ShardFile.mark}. */
export interface ShardMark {
  bytes: number;
  crc: number;
  headBytes: number;
}

export class ShardFile {
  private readonly fd: number;
  private readonly buf = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private buffered = 0;
  /**
   * The caller's bytes not yet written or copied: consecutive writes of adjacent views (a reader thread's batch)
   * join here and go out in one write, without a copy. {@link ShardFile.settle} lets go of them. Kept as a range,
   * not a view: a view per write would be one more object per sample.
   */
  private pending: { buffer: ArrayBufferLike; offset: number; length: number } | undefined;
  private crc = 0;
  private readonly head = new Uint8Array(FINGERPRINT_BYTES);
  private headBytes = 0;
  /** Bytes on disk: where the next write(2) goes (writes are positional, so a rewind needs no seek). */
  private flushed = 0;
  /** Bytes written so far (buffered included). */
  bytes = 0;
  samples = 0;

  /** @param maxWriteBytes the most bytes one write(2) is given (tests make it small). */
  constructor(
    readonly tmpPath: string,
    readonly finalPath: string,
    private readonly maxWriteBytes = MAX_IO_CALL_BYTES,
  ) {
    this.fd = createFresh(tmpPath);
  }

  /**
   * Appends `data`. The bytes may stay referenced until the next non-adjacent write or {@link ShardFile.settle}:
   * callers that reuse their memory settle first.
   */
  write(data: Uint8Array): void {
    if (this.headBytes < FINGERPRINT_BYTES) {
      const take = Math.min(FINGERPRINT_BYTES - this.headBytes, data.length);
      this.head.set(data.subarray(0, take), this.headBytes);
      this.headBytes += take;
    }
    this.bytes += data.length;
    const p = this.pending;
    if (p !== undefined && data.buffer === p.buffer && data.byteOffset === p.offset + p.length) {
      p.length += data.length;
      return;
    }
    this.settle();
    this.pending = { buffer: data.buffer, offset: data.byteOffset, length: data.length };
  }

  /** Writes (long runs) or copies (short ones) the pending bytes: afterwards no caller memory is referenced. */
  settle(): void {
    if (this.pending === undefined) return;
    const p = new Uint8Array(this.pending.buffer, this.pending.offset, this.pending.length);
    this.pending = undefined;
    if (p.length >= DIRECT_WRITE_BYTES) {
      this.flush();
      this.crc = crc32c(p, this.crc);
      this.writeFully(p);
      return;
    }
    if (this.buffered + p.length > WRITE_BUFFER_BYTES) this.flush();
    this.buf.set(p, this.buffered);
    this.buffered += p.length;
  }

  /** Writes `n` zero bytes (tar padding). */
  zeros(n: number): void {
    if (n > 0) this.write(new Uint8Array(n));
  }

  /** Writes the buffer; the file CRC advances here, one call per buffer instead of one per member. */
  private flush(): void {
    if (this.buffered === 0) return;
    const chunk = this.buf.subarray(0, this.buffered);
    this.crc = crc32c(chunk, this.crc);
    this.writeFully(chunk);
    this.buffered = 0;
  }

  private writeFully(data: Uint8Array): void {
    let off = 0;
    while (off < data.length) off += fsCall('write', this.tmpPath, () => fs.writeSync(this.fd, data, off, Math.min(data.length - off, this.maxWriteBytes), this.flushed + off));
    this.flushed += data.length;
  }

  /**
   * Writes out everything so far and returns where the file stands, for {@link ShardFile.rewind}. No caller memory is
   * referenced afterwards.
   */
  mark(): ShardMark {
    this.settle();
    this.flush();
    return { bytes: this.bytes, crc: this.crc, headBytes: this.headBytes };
  }

  /** Cuts the file back to `mark` (taken by {@link ShardFile.mark}, nothing rewound since): as if nothing had been written after it. */
  rewind(mark: ShardMark): void {
    this.pending = undefined;
    this.buffered = 0;
    fsCall('truncate', this.tmpPath, () => fs.ftruncateSync(this.fd, mark.bytes));
    this.flushed = mark.bytes;
    this.bytes = mark.bytes;
    this.crc = mark.crc;
    this.headBytes = mark.headBytes;
  }

  /** Flushes, optionally fsyncs, closes and renames into place. Returns the checksums. */
  commit(sync: boolean): { crc32c: number; fingerprint: number } {
    this.settle();
    this.flush();
    if (sync) fsCall('sync', this.tmpPath, () => fs.fsyncSync(this.fd));
    fsCall('close', this.tmpPath, () => fs.closeSync(this.fd));
    fsCall('rename', this.tmpPath, () => fs.renameSync(this.tmpPath, this.finalPath));
    return { crc32c: this.crc >>> 0, fingerprint: crc32c(this.head.subarray(0, this.headBytes)) };
  }

  /** Closes and deletes the temporary file (after a failure). */
  discard(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
    fs.rmSync(this.tmpPath, { force: true });
  }
}
