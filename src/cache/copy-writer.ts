/**
 * A shard's copy written into the cache from bytes its caller reads anyway (verify streams every shard once).
 *
 * The writer checks what it is given by itself: the copy is renamed into place only when the bytes written, in
 * order, are exactly the shard's size and whole-file CRC32C from the index. Anything else (damage at the source, a
 * read that failed half way, an abort) removes the `.part` file, so nothing unverified is ever left under a copy's name.
 */
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { crc32c } from '../../formats/checksum.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { unlock } from './cache-lock.js';
import { writeProof } from './copy-proof.js';

export class CopyWriter {
  private crc = 0;
  private written = 0;
  private done = false;

  /** @internal Made by {@link ShardCache.startCopy}, which took `lock` and reserved room for `part`. */
  constructor(
    private readonly handle: FileHandle,
    private readonly record: ShardRecord,
    private readonly part: string,
    /** Where the copy goes once it checks out. */
    readonly copy: string,
    private readonly lock: string,
  ) {}

  /** Appends the shard's next bytes (the caller's chunks, in order from byte 0). */
  async write(chunk: Uint8Array): Promise<void> {
    if (this.done) return;
    if (this.written + chunk.length > this.record.bytes) {
      this.written += chunk.length; // longer than the index says: commit will refuse it
      return;
    }
    this.crc = crc32c(chunk, this.crc);
    await this.handle.write(chunk, 0, chunk.length, this.written);
    this.written += chunk.length;
  }

  /** Puts the copy in place when it is the shard the index describes (true), else removes it (false). */
  async commit(): Promise<boolean> {
    if (this.done) return false;
    if (this.written !== this.record.bytes || this.crc >>> 0 !== this.record.crc32c >>> 0) {
      await this.abort();
      return false;
    }
    this.done = true;
    try {
      await this.handle.sync();
      await this.handle.close();
      fs.renameSync(this.part, this.copy);
      writeProof(this.copy, this.record.crc32c);
      return true;
    } catch {
      fs.rmSync(this.part, { force: true });
      return false;
    } finally {
      unlock(this.lock);
    }
  }

  /** Removes the partial copy and frees its room (idempotent). */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.handle.close().catch(() => undefined);
    fs.rmSync(this.part, { force: true });
    unlock(this.lock);
  }
}
