/**
 * The optional native addon (src/native/shardkit.c): read-only memory maps of local shards (map.c), copied out into
 * JS-owned buffers, and hardware CRC32C. It gives the local synchronous read path what LMDB has: a sample read is a
 * memcpy out of the page cache instead of a pread system call. Pack uses it to list directories (list-dir.c) and
 * read source files (read-file.c); verify, to walk index leaves and check tiny samples (verify-scan.c). When the addon was not built (no compiler at install time, an unsupported
 * platform) or SHARDKIT_NATIVE=0 is set, shardkit reads with pread, checks with @node-rs/crc32 and lists with
 * fs.readdir: same results, same errors, slower.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { PACKAGE } from '../version.js';
import { useCrc32c } from '../../formats/checksum.js';

/** An opaque handle to one mapped file; only the addon looks inside. */
export type NativeMap = { readonly __nativeMap: unique symbol };

export interface NativeAddon {
  /** Maps `length` bytes of the open file `fd` read-only (MAP_SHARED); `randomAccess` adds MADV_RANDOM. */
  map(fd: number, length: number, randomAccess?: boolean): NativeMap;
  /** Unmaps now (idempotent); later copies throw ERR_SHARDKIT_NATIVE_CLOSED. */
  unmap(map: NativeMap): void;
  /**
   * Copies `length` mapped bytes at `offset` into `target` at `targetOffset` (both ranges checked in C). Throws
   * ERR_SHARDKIT_NATIVE_TRUNCATED when the file shrank under the map (SIGBUS caught), ..._RANGE past the mapped
   * length, ..._CLOSED after unmap.
   */
  copy(map: NativeMap, offset: number, length: number, target: Uint8Array, targetOffset: number): void;
  /** The same copy, returning the CRC32C of the copied bytes [crcStart, crcStart + crcLength) (one call, not two). */
  copy(map: NativeMap, offset: number, length: number, target: Uint8Array, targetOffset: number, crcStart: number, crcLength: number): number;
  /**
   * `count` copies from one map into `target` in one call: row i of `spec` (COPY_MANY_ROW numbers from i *
   * COPY_MANY_ROW) holds offset, length, target offset, CRC start and CRC length (< 0: no checksum) of one copy,
   * checked as copy() checks its arguments; its CRC32C is written to the row's last number. Throws as copy() does
   * at the first bad row, the rows before it done.
   */
  copyMany(map: NativeMap, target: Uint8Array, spec: Float64Array, count: number): void;
  /** CRC32C of `bytes` continuing from `seed` (0 to start): the same value as formats/checksum.ts crc32c. */
  crc32c(bytes: Uint8Array, seed?: number): number;
  /**
   * The same by one kernel of crc32cKernels, copying `bytes` into `copyTarget` (at least as long) in the same pass
   * when given: for tests of every kernel this CPU has.
   */
  crc32cWith(kernel: string, bytes: Uint8Array, seed?: number, copyTarget?: Uint8Array): number;
  /**
   * The CRC32C kernels this CPU has, slowest first ("table", "sse4.2" or "armv8-crc", "vpclmulqdq-256",
   * "vpclmulqdq-512"); crc32c uses the last, so more than one means it runs on CRC instructions.
   */
  readonly crc32cKernels: readonly string[];
  /**
   * Reads a source file for pack as GNU tar does (open, fstat, read, fstat, close) in one call, into
   * `target[offset, offset + room)`: returns its size, or -(size + 1) without reading when it does not fit.
   * Throws an Error with the errno name as `code` and `syscall`, or ERR_SHARDKIT_NATIVE_NOT_FILE (no longer a
   * regular file) or ERR_SHARDKIT_NATIVE_CHANGED (size, mtime or ctime changed while it was read).
   */
  readFile(path: string, target: Uint8Array, offset: number, room: number): number;
  /**
   * Reads a run of samples for pack and lays them out as shard bytes, in one call: per member in order, the file
   * `root` + the next NUL-terminated name in `names` (read as readFile does, or with one fstat when it last changed
   * seconds before on a local file system: see source-file.c; `root` is UTF-8 ending in a separator),
   * preceded by a ustar header made from `template` and that name and followed by padding to 512 bytes (tar), or
   * alone (`template` null: packed). `counts` holds the members per sample. `io` carries the cursor in and out and
   * the results: see {@link ReadSamplesIo}. Stops when every sample is done or one cannot be (rolled back, with the
   * reason; target's bytes past the rolled-back position may have been written).
   */
  readSamples(root: Uint8Array, names: Uint8Array, counts: Uint32Array, template: Uint8Array | null, target: Uint8Array, io: Float64Array): void;
  /**
   * Lists a directory on the thread pool (src/native/list-dir.c): `[kinds, names]`, the names joined by NUL and one
   * kind per entry ('f' file, 'd' directory, 'l' symbolic link, 'o' other), sorted by walk-order.ts listingSortKey
   * (links as files) in `'sample'` order when `sampleOrder`, else `'path'` order. Rejects with the errno name as
   * `code` and `syscall` "scandir", or ERR_SHARDKIT_NATIVE_NOT_UTF8 for a name that is not UTF-8.
   */
  listDirectory(path: string, sampleOrder: boolean): Promise<[kinds: string, names: string]>;
  /** CPU time of the calling thread in milliseconds (-1 where the platform has no per-thread clock). */
  threadCpuMs(): number;
  /**
   * verify's leaf scan (src/native/verify-scan.c; src/verify/leaf-scan.ts LeafScan.scan is the same in JavaScript):
   * reads leaf page `pageNo` into `records` (the record arrays laid out as {@link RecordArrays} says, record i at
   * index i) and the bytes of its first and last keys; when `names` is given (a walk that lists names: two typed
   * arrays fewer to unwrap a page otherwise) and not empty, the tar member name of each record
   * that is one member stored as is (NAME_START and NAME_LENGTH into `names`; -1 and 0 for the others and for names
   * past its end), and rows in `table` ({@link MemberRow}) for a record of several members all stored as they are
   * (MEMBER_ROW: its first row, or -1); `out` gets the counts and sums at {@link LeafScanOut}. Its count is 0 when
   * the page is not one the scan takes (or the arrays are too short for it): the JavaScript path then reads it and
   * names what is wrong. The arguments must not share memory.
   */
  verifyLeafScan(page: Uint8Array, pageNo: number, records: Float64Array, firstKey: Uint8Array, lastKey: Uint8Array, out: Float64Array, names?: Uint8Array, table?: Float64Array): void;
  /**
   * verify's member check on a shard chunk (ShardCheck.takeLones in JavaScript): from record io[FROM] to
   * io[COUNT], the run of records that a chunk holding shard bytes [io[POS], io[POS] + chunk.length) holds intact
   * (see {@link TakeLonesIo}); io gets the first record not taken and the state after the run. `records` as
   * verifyLeafScan fills it; `records` and `io` must not share memory.
   */
  verifyTakeLones(chunk: Uint8Array, records: Float64Array, io: Float64Array): void;
  /**
   * verify's tar headers on a shard chunk (TarScanner in JavaScript): from chunk[io[FROM]], where a header starts
   * (the chunk holds shard bytes from io[BASE]), the run of plain headers of regular files, each a row in `rows`
   * ({@link TarRow}, from row io[ROWS]) and its name in `names` (from io[NAMES]). io gets AT, the chunk index of the
   * first header not read (or the chunk's length), NEXT, its offset in the shard, and the rows and name bytes used.
   * Anything unusual stops the run (see src/native/verify-tar.c): TarScanner reads it.
   */
  verifyTarHeaders(chunk: Uint8Array, rows: Float64Array, names: Uint8Array, io: Float64Array): void;
}

/**
 * verifyLeafScan's and verifyTakeLones' `records`: RecordArrays.COUNT arrays of `capacity` numbers one after the
 * other in one Float64Array (capacity = length / COUNT), array k from k x capacity: shard, offset, length, size,
 * stored, loneCrc, members as uint32 (a Uint32Array over the first half of its part), then nameStart, nameLength and
 * memberRow. One typed array a call, not ten: N-API unwraps each at a cost (src/native/verify-scan.c).
 */
export const RecordArrays = { SHARD: 0, OFFSET: 1, LENGTH: 2, SIZE: 3, STORED: 4, LONE_CRC: 5, MEMBERS: 6, NAME_START: 7, NAME_LENGTH: 8, MEMBER_ROW: 9, COUNT: 10 } as const;

/** verifyLeafScan's member table: COLUMNS numbers a member (its start in its sample's span, size, CRC32C, name in `names`). */
export const MemberRow = { START: 0, SIZE: 1, CRC: 2, NAME_START: 3, NAME_LENGTH: 4, COLUMNS: 5 } as const;

/** Indices into verifyLeafScan's `out` (src/native/verify-scan.c). */
export const LeafScanOut = {
  COUNT: 0,
  NEXT: 1,
  TOTAL_MEMBERS: 2,
  TOTAL_LENGTH: 3,
  TOTAL_SIZE: 4,
  TOTAL_STORED: 5,
  ONE_SHARD: 6,
  MAX_END: 7,
  FIRST_KEY_LENGTH: 8,
  LAST_KEY_LENGTH: 9,
  NAMES_WANTED: 10,
  LENGTH: 11,
} as const;

/**
 * Indices into verifyTakeLones' `io`. In: the records [FROM, COUNT), the shard, the chunk's offset in it, the end
 * of the last span checked and the offset of the last sample fed. Out: NEXT, the first record not taken; PREV_END
 * and LAST after the run; BYTES, the span bytes taken.
 */
export const TakeLonesIo = { FROM: 0, COUNT: 1, SHARD: 2, POS: 3, PREV_END: 4, LAST: 5, NEXT: 6, BYTES: 7, LENGTH: 8 } as const;

/** verifyTarHeaders' rows: COLUMNS numbers a header (its data's offset in the shard, its size, its name in `names`). */
export const TarRow = { DATA: 0, SIZE: 1, NAME_START: 2, NAME_LENGTH: 3, COLUMNS: 4 } as const;

/** Indices into verifyTarHeaders' `io`. In: FROM, BASE, ROWS, NAMES. Out: AT, NEXT, ROWS, NAMES. */
export const TarHeadersIo = { FROM: 0, BASE: 1, ROWS: 2, NAMES: 3, AT: 4, NEXT: 5, LENGTH: 6 } as const;

/** Numbers per copy in copyMany's spec: offset, length, target offset, CRC start, CRC length, CRC out. */
export const COPY_MANY_ROW = 6;

/** Indices into readSamples' `io` (src/native/read-file.c). */
export const ReadSamplesIo = {
  /** In/out: the next sample; its first member's index over all samples; the byte offset of its first name. */
  SAMPLE: 0,
  FILE: 1,
  NAME_AT: 2,
  /** In/out: where its bytes go in target. In: the end of the room there. */
  POS: 3,
  END: 4,
  /** In: 1 to pass over the next sample unread (reset to 0). */
  SKIP: 5,
  /** Out: a {@link ReadSamplesStatus}; for a stop, the member (0-based in its sample), errno and syscall, or the size that did not fit. */
  STATUS: 6,
  MEMBER: 7,
  ERRNO: 8,
  SYSCALL: 9,
  SIZE: 10,
  /** Out: per member f (over all samples), its size at RESULTS + 2f and its CRC32C at RESULTS + 2f + 1. */
  RESULTS: 16,
} as const;

/** Why readSamples stopped: all done, no room for the sample, or its member failed (errno, not a file, changed), or a tar name that needs a pax header. */
export const ReadSamplesStatus = { DONE: 0, ROOM: 1, ERRNO: 2, NOT_FILE: 3, CHANGED: 4, NAME: 5 } as const;
/** ReadSamplesIo.SYSCALL values. */
export const READ_SAMPLES_SYSCALLS = ['', 'open', 'fstat', 'read'] as const;

/** Error codes the addon throws (Error#code). */
export const NativeErrorCodes = {
  ARG: 'ERR_SHARDKIT_NATIVE_ARG',
  CLOSED: 'ERR_SHARDKIT_NATIVE_CLOSED',
  RANGE: 'ERR_SHARDKIT_NATIVE_RANGE',
  TRUNCATED: 'ERR_SHARDKIT_NATIVE_TRUNCATED',
  MAP: 'ERR_SHARDKIT_NATIVE_MAP',
  NOT_FILE: 'ERR_SHARDKIT_NATIVE_NOT_FILE',
  CHANGED: 'ERR_SHARDKIT_NATIVE_CHANGED',
  NOT_UTF8: 'ERR_SHARDKIT_NATIVE_NOT_UTF8',
} as const;

/** Where node-gyp leaves the addon, in shardkit's package (wherever this module runs from: see PACKAGE). */
const ADDON = ['src', 'native', 'build', 'Release', 'shardkit.node'];

let loaded: { addon: NativeAddon | undefined; error: unknown } | undefined;

function load(): { addon: NativeAddon | undefined; error: unknown } {
  if (loaded !== undefined) return loaded;
  if (process.platform === 'win32') return (loaded = { addon: undefined, error: new Error('no native addon on Windows') });
  if (PACKAGE === undefined) return (loaded = { addon: undefined, error: new Error("shardkit's package.json was not found above its modules") });
  const file = path.join(PACKAGE.dir, ...ADDON);
  try {
    const raw = createRequire(import.meta.url)(file) as RawAddon;
    // all or nothing: a module whose parameter block failed to initialise is not used (pread then)
    if (typeof raw.copyWithParams === 'function' && typeof raw.copyMany === 'function' && typeof raw.crc32c === 'function' && typeof raw.verifyLeafScan === 'function' && typeof raw.verifyTakeLones === 'function' && typeof raw.verifyTarHeaders === 'function' && Array.isArray(raw.crc32cKernels) && raw.copyParams instanceof Float64Array && raw.copyParams.length === PARAMS) {
      return (loaded = { addon: wrap(raw), error: undefined });
    }
    return (loaded = { addon: undefined, error: new Error(`${file}: incomplete native addon (no parameter block)`) });
  } catch (err) {
    return (loaded = { addon: undefined, error: err });
  }
}

/** Numbers in the parameter block: offset, length, target offset, CRC start, CRC length, CRC out. */
const PARAMS = 6;

/** What the compiled module exports: NativeAddon's functions, but copy's numbers pass through a shared block. */
interface RawAddon extends Omit<NativeAddon, 'copy'> {
  /** copy(map, p[0], p[1], target, p[2], p[3], p[4]) with p = copyParams (p[4] < 0: no checksum); the CRC32C lands in p[5]. */
  copyWithParams(map: NativeMap, target: Uint8Array): void;
  /** This thread's parameter block (memory the addon owns). */
  copyParams: Float64Array;
}

/**
 * The addon with copy() going through copyWithParams: five numbers written to a Float64Array the addon reads in
 * place cost less than five Node-API conversions (see map.c); arguments are checked in C either way.
 */
function wrap(raw: RawAddon): NativeAddon {
  const params = raw.copyParams;
  const copyWithParams = raw.copyWithParams;
  function copy(map: NativeMap, offset: number, length: number, target: Uint8Array, targetOffset: number): void;
  function copy(map: NativeMap, offset: number, length: number, target: Uint8Array, targetOffset: number, crcStart: number, crcLength: number): number;
  function copy(map: NativeMap, offset: number, length: number, target: Uint8Array, targetOffset: number, crcStart?: number, crcLength?: number): number | undefined {
    // detached (someone transferred its buffer): writes would not reach C, which would copy with stale numbers
    if (params.length !== PARAMS) throw Object.assign(new Error('shardkit native: the copy parameter block was detached'), { code: NativeErrorCodes.ARG });
    params[0] = offset;
    params[1] = length;
    params[2] = targetOffset;
    if (crcLength === undefined) {
      params[4] = -1;
      copyWithParams(map, target);
      return undefined;
    }
    params[3] = crcStart ?? Number.NaN;
    params[4] = crcLength >= 0 ? crcLength : Number.NaN; // negative means "no checksum" to C: refuse it here
    copyWithParams(map, target);
    return params[5];
  }
  return { map: raw.map, unmap: raw.unmap, copy, copyMany: raw.copyMany, crc32c: raw.crc32c, crc32cWith: raw.crc32cWith, crc32cKernels: raw.crc32cKernels, readFile: raw.readFile, readSamples: raw.readSamples, listDirectory: raw.listDirectory, threadCpuMs: raw.threadCpuMs, verifyLeafScan: raw.verifyLeafScan, verifyTakeLones: raw.verifyTakeLones, verifyTarHeaders: raw.verifyTarHeaders };
}

/** SHARDKIT_NATIVE=0 (or "false", "off") turns the addon off for the whole process: useful for tests and benchmarks. */
function disabledByEnvironment(): boolean {
  const v = process.env.SHARDKIT_NATIVE;
  return v === '0' || v === 'false' || v === 'off';
}

/**
 * Makes formats/checksum.ts crc32c use the addon's hardware CRC32C in this thread, when the addon is there and
 * not turned off; returns whether it does. Pack calls it in each of its threads.
 */
export function useNativeCrc32c(): boolean {
  const addon = nativeAddon();
  if (addon === undefined) return false;
  useCrc32c((data, previous) => addon.crc32c(data, previous));
  return true;
}

/** The addon, or undefined when it is not built or SHARDKIT_NATIVE=0. Loads it on first use. */
export function nativeAddon(): NativeAddon | undefined {
  if (disabledByEnvironment()) return undefined;
  return load().addon;
}

/**
 * True when shardkit's native addon is built and enabled: local datasets then read shards through read-only memory
 * maps and verify CRC32C in hardware. False means the portable pread path (same results, slower).
 */
export function nativeAvailable(): boolean {
  return nativeAddon() !== undefined;
}

/** Why the addon did not load (for diagnostics), or undefined when it did or was turned off. */
export function nativeLoadError(): unknown {
  return disabledByEnvironment() ? undefined : load().error;
}
