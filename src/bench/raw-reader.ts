/**
 * The raw side of the bench: a loader over Lots Of Small Files as a typical training loader reads them — for each
 * member file of each sample: open, fstat (for the size), read, close — counting every one of those calls.
 *
 * I/O policy, chosen to match the shard reader so the comparison isolates the data layout: files of up to 64 KiB
 * are read with blocking calls right here (the shard reader's synchronous fast path has the same threshold);
 * larger files are read on the thread pool, at most `concurrency` at once (the shard loader's read bound).
 */
import fs from 'node:fs';
import path from 'node:path';
import { memberPath, setMember, type Sample } from '../../formats/sample.js';
import { DEFAULT_SYNC_READ_MAX_BYTES } from '../io/file-source.js';
import type { IoStats } from '../io/io-stats.js';

export type Limit = <T>(fn: () => Promise<T>) => Promise<T>;

export class RawSampleReader {
  private readonly rawDir: string;
  private readonly stats: IoStats;
  private readonly limit: Limit;

  constructor(rawDir: string, stats: IoStats, limit: Limit) {
    this.rawDir = rawDir;
    this.stats = stats;
    this.limit = limit;
  }

  /** The file a member lives in: `rawDir/key.ext`, the pack source's own name for it. */
  filePath(key: string, ext: string): string {
    return path.join(this.rawDir, memberPath(key, ext));
  }

  /** Reads a batch of samples; an array when every file was small enough for blocking reads, else a promise. */
  readBatch(keys: readonly string[], exts: readonly (readonly string[])[]): Sample[] | Promise<Sample[]> {
    const samples: Sample[] = new Array<Sample>(keys.length);
    let pending: Array<Promise<void>> | undefined;
    keys.forEach((key, i) => {
      const members: Record<string, Uint8Array> = {};
      samples[i] = { key, members };
      for (const ext of exts[i] ?? []) {
        const got = this.readFile(this.filePath(key, ext));
        if (got instanceof Uint8Array) setMember(members, ext, got);
        else {
          setMember(members, ext, new Uint8Array(0)); // keeps member order; replaced when the read ends
          (pending ??= []).push(got.then((bytes) => setMember(members, ext, bytes)));
        }
      }
    });
    return pending === undefined ? samples : Promise.all(pending).then(() => samples);
  }

  /** open + fstat + read(s) + close of one file, each counted. */
  private readFile(file: string): Uint8Array | Promise<Uint8Array> {
    const s = this.stats;
    const fd = fs.openSync(file, 'r');
    s.opens++;
    let size: number;
    try {
      size = fs.fstatSync(fd).size;
      s.stats++;
    } catch (err) {
      this.close(fd);
      throw err;
    }
    if (size > DEFAULT_SYNC_READ_MAX_BYTES) {
      return this.limit(() => this.readAsync(fd, size)).finally(() => this.close(fd));
    }
    try {
      return this.readSync(fd, size);
    } finally {
      this.close(fd);
    }
  }

  /** Reads until `size` bytes or end of file; a typical loader issues one read even for an empty file. */
  private readSync(fd: number, size: number): Uint8Array {
    const buffer = Buffer.allocUnsafe(size);
    let filled = 0;
    do {
      const n = fs.readSync(fd, buffer, filled, size - filled, filled);
      this.countRead(n);
      if (n === 0) break;
      filled += n;
    } while (filled < size);
    return buffer.subarray(0, filled);
  }

  private async readAsync(fd: number, size: number): Promise<Uint8Array> {
    const buffer = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const n = await new Promise<number>((resolve, reject) =>
        fs.read(fd, buffer, filled, size - filled, filled, (err, bytes) => (err === null ? resolve(bytes) : reject(err))),
      );
      this.countRead(n);
      if (n === 0) break;
      filled += n;
    }
    return buffer.subarray(0, filled);
  }

  private countRead(n: number): void {
    this.stats.reads++;
    this.stats.bytesRead += n;
  }

  private close(fd: number): void {
    fs.closeSync(fd);
    this.stats.closes++;
  }
}
