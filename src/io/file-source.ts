import fs from 'node:fs';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { COPY_MANY_ROW, nativeAddon, type NativeAddon } from '../native/native.js';
import type { SyncByteSource } from './byte-source.js';
import { FileMap } from './file-map.js';
import { MAX_IO_CALL_BYTES, expectByteRange, expectIntegerInRange } from './io-options.js';
import type { IoStats } from './io-stats.js';

/**
 * Reads up to this many bytes inside `read()` with a synchronous pread instead of a libuv thread-pool round trip.
 * Measured on a warm page cache (Node 20, 2 cores, 20,000 random reads in a 256 MiB file): readSync costs
 * ~3 us for 1 KiB, ~8-12 us for 10 KiB, ~35-44 us for 100 KiB, while FileHandle.read costs ~21/30-35/72-80 us
 * one at a time and ~16/20/30-40 us per read with 16 in flight. Below ~64 KiB the synchronous call wins even
 * against a full pool; above it the pool's parallelism catches up, and a cold or remote disk would block the
 * event loop for a whole device latency, so large reads go to the pool.
 */
export const DEFAULT_SYNC_READ_MAX_BYTES = 64 * 1024;

/** Linux and macOS both cap one read(2) near 2 GiB; the read loops continue past short reads anyway. */
const MAX_SYNC_READ_OPTION = 2 ** 31 - 1;

export interface FileSourceOptions {
  /** Counters to add opens, closes, reads, bytes and fstat calls to. */
  stats?: IoStats;
  /**
   * `read()`/`readInto()` serve requests of at most this many bytes with a synchronous pread (fast on a warm page
   * cache) and larger ones through the libuv thread pool. 0 sends every async read to the pool: use it for cold
   * caches and network file systems, where one pread can take milliseconds. Default 65536.
   */
  syncReadMaxBytes?: number;
  /**
   * Serve synchronous reads (and async ones up to syncReadMaxBytes) by copying out of a read-only memory map of the
   * whole file, made at the first such read, when the native addon is available (see src/native/native.ts):
   * a memcpy from the page cache instead of a pread system call. Default false. Falls back to pread when the
   * addon is missing, SHARDKIT_NATIVE=0 is set, mmap(2) fails, or a range lies past the size mapped.
   */
  mmap?: boolean;
}

/**
 * One local file on one file descriptor, read only with positional reads (pread), so any number of reads may be
 * in flight at once. `readSync`/`readIntoSync` are the fast path for `getSync`; `read`/`readInto` follow
 * {@link FileSourceOptions.syncReadMaxBytes}. Closing while thread-pool reads are in flight defers the actual
 * close(2) until they finish, so a descriptor number is never reused under a pending read.
 *
 * @example
 * const src = FileSource.openSync('/data/ds/shard-00000.tar', { stats });
 * const header = src.readSync(0, 512);
 * src.closeSync();
 */
export class FileSource implements SyncByteSource {
  readonly name: string;
  private readonly fd: number;
  private readonly stats: IoStats | undefined;
  private readonly syncReadMaxBytes: number;
  private cachedSize = -1;
  private closed = false;
  private inFlight = 0;
  private fdClosed = false;
  /** The addon when this source may map its file; undefined: pread only. */
  private readonly addon: NativeAddon | undefined;
  /** undefined: not mapped yet; null: not mappable (empty file, mmap failed); else the map (see file-map.ts). */
  private map: FileMap | null | undefined;

  private constructor(path: string, fd: number, options: FileSourceOptions) {
    this.name = path;
    this.fd = fd;
    this.stats = options.stats;
    this.syncReadMaxBytes = options.syncReadMaxBytes ?? DEFAULT_SYNC_READ_MAX_BYTES;
    this.addon = options.mmap === true ? nativeAddon() : undefined;
    if (this.addon === undefined) this.map = null;
    if (this.stats !== undefined) this.stats.opens++;
  }

  /**
   * Opens `path` read-only. Missing file: SHARDKIT_ERR_SHARD_MISSING; not a regular file (a FIFO, a device, a
   * directory): SHARDKIT_ERR_UNSAFE_PATH; any other failure: SHARDKIT_ERR_IO. Non-blocking, so a FIFO put where a
   * shard should be is refused at once instead of waiting forever for a writer; the fstat that checks the kind
   * gives the size too.
   */
  static openSync(path: string, options: FileSourceOptions = {}): FileSource {
    checkOptions(options);
    let fd: number;
    try {
      fd = fs.openSync(path, OPEN_FLAGS);
    } catch (err) {
      throw openError(path, err);
    }
    let st: fs.Stats;
    try {
      st = fs.fstatSync(fd);
    } catch (err) {
      fs.closeSync(fd);
      throw new ShardkitError(ErrorCodes.IO, `Cannot stat ${path}: ${errorText(err)}`, { file: path, cause: err });
    }
    return FileSource.opened(path, fd, st, options);
  }

  /** Like {@link FileSource.openSync}, but open(2) runs on the thread pool (slow metadata servers do not stall). */
  static open(path: string, options: FileSourceOptions = {}): Promise<FileSource> {
    try {
      checkOptions(options);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      fs.open(path, OPEN_FLAGS, (err, fd) => {
        if (err !== null) return reject(openError(path, err));
        fs.fstat(fd, (statErr, st) => {
          if (statErr !== null) {
            fs.close(fd, () => reject(new ShardkitError(ErrorCodes.IO, `Cannot stat ${path}: ${errorText(statErr)}`, { file: path, cause: statErr })));
            return;
          }
          try {
            resolve(FileSource.opened(path, fd, st, options));
          } catch (e) {
            reject(e);
          }
        });
      });
    });
  }

  /** The source of a file just opened, once fstat says it is a regular file (else closed, and UNSAFE_PATH). */
  private static opened(path: string, fd: number, st: fs.Stats, options: FileSourceOptions): FileSource {
    if (!st.isFile()) {
      fs.closeSync(fd);
      throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${path} is not a regular file (a FIFO, device or directory is never read as one)`, { file: path });
    }
    const source = new FileSource(path, fd, options);
    if (options.stats !== undefined) options.stats.stats++;
    source.cachedSize = st.size;
    return source;
  }

  /** The file size from one fstat, cached: shards are immutable while a dataset is open. */
  sizeSync(): number {
    this.assertOpen();
    if (this.cachedSize < 0) {
      if (this.stats !== undefined) this.stats.stats++;
      try {
        this.cachedSize = fs.fstatSync(this.fd).size;
      } catch (err) {
        throw new ShardkitError(ErrorCodes.IO, `Cannot stat ${this.name}: ${errorText(err)}`, {
          file: this.name,
          cause: err,
        });
      }
    }
    return this.cachedSize;
  }

  size(): Promise<number> {
    try {
      return Promise.resolve(this.sizeSync());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Reads exactly `length` bytes at `offset` into a new buffer (it may view a shared slab: mind byteOffset). */
  readSync(offset: number, length: number): Uint8Array {
    expectByteRange(this.name, offset, length);
    const buffer = Buffer.allocUnsafe(length);
    this.readIntoSync(buffer, 0, length, offset);
    return buffer;
  }

  /**
   * Reads exactly `length` bytes at file position `position` into `buffer` starting at `bufferOffset`: the
   * zero-copy path for callers that reuse pooled buffers. Fails with SHARDKIT_ERR_TRUNCATED if the file ends first.
   * With the `mmap` option, a copy out of the file's memory map (no system call).
   */
  readIntoSync(buffer: Uint8Array, bufferOffset: number, length: number, position: number): void {
    this.assertOpen();
    checkTarget(this.name, buffer, bufferOffset, length, position);
    const map = this.map === undefined ? this.mapFile() : this.map;
    if (map !== null && map.covers(position, length)) {
      map.copy(buffer, bufferOffset, length, position);
      return;
    }
    let done = 0;
    while (done < length) {
      let n: number;
      try {
        n = fs.readSync(this.fd, buffer, bufferOffset + done, Math.min(length - done, MAX_IO_CALL_BYTES), position + done);
      } catch (err) {
        throw this.readError(position + done, err);
      }
      this.countRead(n);
      if (n === 0) break;
      done += n;
    }
    if (done < length) throw this.truncated(position, length, done);
  }

  /**
   * {@link FileSource.readIntoSync} that also returns the CRC32C of bytes [crcStart, crcStart + crcLength) of what
   * it read, when it read from the memory map (the copy and the checksum are one native call); undefined when it
   * read with pread, and the caller computes the checksum. `crcStart + crcLength` must lie within `length`.
   */
  readIntoSyncCrc32c(buffer: Uint8Array, bufferOffset: number, length: number, position: number, crcStart: number, crcLength: number): number | undefined {
    this.assertOpen();
    checkTarget(this.name, buffer, bufferOffset, length, position);
    const map = this.map === undefined ? this.mapFile() : this.map;
    if (map === null || !map.covers(position, length) || crcStart < 0 || crcLength < 0 || crcStart + crcLength > length) {
      this.readIntoSync(buffer, bufferOffset, length, position);
      return undefined;
    }
    return map.copyCrc32c(buffer, bufferOffset, length, position, crcStart, crcLength);
  }

  /**
   * `count` copies with checksums out of the memory map in one native call (see NativeAddon.copyMany for `spec`'s
   * rows: position, length, target offset, CRC start, CRC length, CRC out). False when the file is not mapped, a
   * row reaches past the map or the copy failed (the file shrank under the map): the caller then reads those samples
   * one by one, which reports a failure with the position of the sample it concerns.
   */
  readManyIntoSyncCrc32c(target: Uint8Array, spec: Float64Array, count: number): boolean {
    this.assertOpen();
    const map = this.map === undefined ? this.mapFile() : this.map;
    if (map === null) return false;
    let bytes = 0;
    for (let i = 0, row = 0; i < count; i++, row += COPY_MANY_ROW) {
      const position = spec[row] as number;
      const length = spec[row + 1] as number;
      checkTarget(this.name, target, spec[row + 2] as number, length, position);
      if (!map.covers(position, length)) return false;
      bytes += length;
    }
    return map.copyMany(target, spec, count, bytes);
  }

  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    try {
      expectByteRange(this.name, offset, length);
    } catch (err) {
      return Promise.reject(err);
    }
    if (into !== undefined && into.length >= length) {
      const view = into.subarray(0, length);
      return this.readInto(view, 0, length, offset).then(() => view);
    }
    const buffer = Buffer.allocUnsafe(length);
    return this.readInto(buffer, 0, length, offset).then(() => buffer);
  }

  /** Async twin of {@link FileSource.readIntoSync}; small reads are served synchronously (see syncReadMaxBytes). */
  readInto(buffer: Uint8Array, bufferOffset: number, length: number, position: number): Promise<void> {
    if (length <= this.syncReadMaxBytes) {
      try {
        this.readIntoSync(buffer, bufferOffset, length, position);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    try {
      this.assertOpen();
      checkTarget(this.name, buffer, bufferOffset, length, position);
    } catch (err) {
      return Promise.reject(err);
    }
    this.inFlight++;
    return new Promise<void>((resolve, reject) => {
      let done = 0;
      const step = (): void => {
        fs.read(this.fd, buffer, bufferOffset + done, Math.min(length - done, MAX_IO_CALL_BYTES), position + done, (err, n) => {
          if (err !== null) return finish(this.readError(position + done, err));
          this.countRead(n);
          if (n === 0) return finish(this.truncated(position, length, done));
          done += n;
          if (done < length) step();
          else finish(undefined);
        });
      };
      const finish = (err: ShardkitError | undefined): void => {
        this.inFlight--;
        if (this.closed && this.inFlight === 0) {
          try {
            this.closeFd();
          } catch {
            // Nobody awaits a deferred close; Linux releases the descriptor even when close(2) reports EIO.
          }
        }
        if (err === undefined) resolve();
        else reject(err);
      };
      step();
    });
  }

  /** True when synchronous reads copy from a memory map (the file is mapped; see the `mmap` option). */
  get mapped(): boolean {
    return this.map !== undefined && this.map !== null;
  }

  /**
   * Closes the descriptor now, or when the last thread-pool read finishes, and unmaps the file now (thread-pool
   * reads use the descriptor, never the map). Idempotent.
   */
  closeSync(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.map !== undefined && this.map !== null) {
      const map = this.map;
      this.map = null;
      map.unmap();
    }
    if (this.inFlight === 0) this.closeFd();
  }

  close(): Promise<void> {
    try {
      this.closeSync();
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** True once close()/closeSync() was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  private closeFd(): void {
    if (this.fdClosed) return;
    this.fdClosed = true;
    if (this.stats !== undefined) this.stats.closes++;
    try {
      fs.closeSync(this.fd);
    } catch (err) {
      throw new ShardkitError(ErrorCodes.IO, `Cannot close ${this.name}: ${errorText(err)}`, {
        file: this.name,
        cause: err,
      });
    }
  }

  /** Maps the whole file once (see FileMap.create); null when it cannot be mapped: pread then. */
  private mapFile(): FileMap | null {
    const { name, fd, stats } = this;
    this.map = FileMap.create(this.addon as NativeAddon, this.sizeSync(), { name, fd, stats, readError: (position, err) => this.readError(position, err) });
    return this.map;
  }

  private countRead(n: number): void {
    if (this.stats !== undefined) {
      this.stats.reads++;
      this.stats.bytesRead += n;
    }
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new ShardkitError(ErrorCodes.CLOSED, `${this.name} was closed; open it again to read`, {
        file: this.name,
      });
    }
  }

  private truncated(position: number, length: number, got: number): ShardkitError {
    return new ShardkitError(
      ErrorCodes.TRUNCATED,
      `${this.name} is truncated: needed ${length} bytes at offset ${position} but the file ends at ` +
        `${position + got}; restore the file or re-pack the dataset`,
      { file: this.name, offset: position },
    );
  }

  private readError(position: number, err: unknown): ShardkitError {
    return new ShardkitError(ErrorCodes.IO, `Cannot read ${this.name} at offset ${position}: ${errorText(err)}`, {
      file: this.name,
      offset: position,
      cause: err,
    });
  }
}

function checkOptions(options: FileSourceOptions): void {
  if (options.syncReadMaxBytes !== undefined) {
    expectIntegerInRange('syncReadMaxBytes', options.syncReadMaxBytes, 0, MAX_SYNC_READ_OPTION);
  }
}

function checkTarget(name: string, buffer: Uint8Array, bufferOffset: number, length: number, position: number): void {
  expectByteRange(name, position, length);
  if (!Number.isSafeInteger(bufferOffset) || bufferOffset < 0 || bufferOffset + length > buffer.byteLength) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected bufferOffset + length within the ${buffer.byteLength}-byte buffer but received ` +
        `${String(bufferOffset)} + ${length} (${name})`,
      { file: name },
    );
  }
}

/** Read-only, and not blocking in open(2) on a FIFO (no effect on a regular file's reads). */
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK;

function openError(path: string, err: unknown): ShardkitError {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new ShardkitError(
      ErrorCodes.SHARD_MISSING,
      `${path} does not exist (${code}); restore the missing file or re-pack the dataset`,
      { file: path, cause: err },
    );
  }
  const hint = code === 'EMFILE' || code === 'ENFILE' ? '; lower maxOpen or raise ulimit -n' : '';
  return new ShardkitError(ErrorCodes.IO, `Cannot open ${path}: ${errorText(err)}${hint}`, { file: path, cause: err });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
