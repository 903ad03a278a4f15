/**
 * The memory map behind FileSource's `mmap` option (see src/native/native.ts): one read-only map of the whole file,
 * and reads served as copies out of it (a memcpy from the page cache, with the CRC32C in the same native call when
 * asked) instead of pread system calls. The addon's failures are reported as the pread path reports them.
 */
import fs from 'node:fs';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { NativeErrorCodes, type NativeAddon, type NativeMap } from '../native/native.js';
import type { IoStats } from './io-stats.js';

/**
 * No MADV_RANDOM: on a warm cache it changes nothing (measured, 20,000 random 1-10 KiB reads: 3.1 vs 3.1-3.4 us per
 * atViewSync), and on a cold one it would turn a sample spanning k pages into k serial device reads (one per page
 * fault), where the kernel's default read-around fetches it with one.
 */
const MAP_RANDOM_ACCESS = false;

/** The file a map is of, as its source knows it: for messages, for the counters, and for the errors pread reports. */
export interface MappedFileInfo {
  name: string;
  fd: number;
  stats: IoStats | undefined;
  /** The error a failed pread at `position` gives: what an addon failure without a meaning of its own becomes. */
  readError(position: number, err: unknown): ShardkitError;
}

/** A read-only map of a whole file; ranges past {@link FileMap.length} are for pread. */
export class FileMap {
  private constructor(
    private readonly addon: NativeAddon,
    private readonly map: NativeMap,
    /** Bytes mapped: the file's size when it was mapped. */
    readonly length: number,
    private readonly file: MappedFileInfo,
  ) {}

  /** Maps the first `size` bytes of the file (its size from the cached fstat); null when it cannot be mapped: pread then. */
  static create(addon: NativeAddon, size: number, file: MappedFileInfo): FileMap | null {
    if (size <= 0) return null;
    try {
      return new FileMap(addon, addon.map(file.fd, size, MAP_RANDOM_ACCESS), size, file);
    } catch {
      return null; // e.g. a file system without mmap support: pread works everywhere
    }
  }

  /** Whether `length` bytes at `position` lie within the map. */
  covers(position: number, length: number): boolean {
    return position + length <= this.length;
  }

  /** Copies `length` bytes at `position` into `buffer` at `bufferOffset`; the range must lie within the map. */
  copy(buffer: Uint8Array, bufferOffset: number, length: number, position: number): void {
    try {
      this.addon.copy(this.map, position, length, buffer, bufferOffset);
    } catch (err) {
      throw this.error(err, position, length);
    }
    this.countReads(1, length);
  }

  /** {@link FileMap.copy} that also returns the CRC32C of bytes [crcStart, crcStart + crcLength) of what it copied. */
  copyCrc32c(buffer: Uint8Array, bufferOffset: number, length: number, position: number, crcStart: number, crcLength: number): number {
    let crc: number;
    try {
      crc = this.addon.copy(this.map, position, length, buffer, bufferOffset, crcStart, crcLength);
    } catch (err) {
      throw this.error(err, position, length);
    }
    this.countReads(1, length);
    return crc;
  }

  /**
   * `count` copies of `bytes` in all in one native call (see NativeAddon.copyMany for `spec`'s rows), each row checked
   * by the caller to lie within the map. False when the copy failed (the file shrank under the map).
   */
  copyMany(target: Uint8Array, spec: Float64Array, count: number, bytes: number): boolean {
    try {
      this.addon.copyMany(this.map, target, spec, count);
    } catch {
      return false;
    }
    this.countReads(count, bytes);
    return true;
  }

  unmap(): void {
    this.addon.unmap(this.map);
  }

  private countReads(reads: number, bytes: number): void {
    const stats = this.file.stats;
    if (stats !== undefined) {
      stats.reads += reads;
      stats.mappedReads += reads;
      stats.bytesRead += bytes;
    }
  }

  /** The addon's errors as the pread path would report them: a file that shrank is TRUNCATED, naming the file. */
  private error(err: unknown, position: number, length: number): ShardkitError {
    const name = this.file.name;
    const code = (err as { code?: unknown } | null)?.code;
    if (code === NativeErrorCodes.TRUNCATED || code === NativeErrorCodes.RANGE) {
      let now = '';
      try {
        now = ` (it is ${fs.fstatSync(this.file.fd).size} bytes now)`;
      } catch {
        // the message only loses the current size
      }
      return new ShardkitError(
        ErrorCodes.TRUNCATED,
        `${name} is truncated: needed ${length} bytes at offset ${position} but the file shrank while open` +
          `${now}; restore the file or re-pack the dataset`,
        { file: name, offset: position, cause: err },
      );
    }
    if (code === NativeErrorCodes.CLOSED) {
      return new ShardkitError(ErrorCodes.CLOSED, `${name} was closed; open it again to read`, { file: name, cause: err });
    }
    return this.file.readError(position, err);
  }
}
