/**
 * Reads one tar file once, sequentially, feeding a {@link TarScanner}: the index entries of its samples come out,
 * with the shard's size, whole-file CRC32C and fingerprint computed on the same pass.
 */
import fs from 'node:fs';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { FINGERPRINT_BYTES, type ShardRecord } from '../../formats/index-layout.js';
import { TarScanner } from '../../formats/tar-scan.js';
import path from 'node:path';
import { EntrySorter } from '../pack/entry-runs.js';
import { fsCall, ioError } from '../pack/fs-errors.js';
import { TarSampleCollector, type TarSampleOptions } from './tar-samples.js';

export const SCAN_CHUNK_BYTES = 8 << 20;
/** Index runs while `index`/`reindex` scan tars; removed when they finish. */
export const ADOPT_WORK_DIR = '.shardkit-index-work';

export interface ScannedShard {
  record: ShardRecord;
  /** Members recognised as writer-compressed LZ4 (reindex). */
  compressedMembers: number;
}

export interface ScanProgress {
  file: string;
  bytesDone: number;
  bytesTotal: number;
}

/**
 * Scans `filePath` (named `options.shardFile` in the dataset). Sample entries and skips go to the callbacks in
 * `options`; a damaged header or a file cut short fails with CORRUPT_SHARD / TRUNCATED naming the byte offset.
 */
export async function scanTarFile(
  filePath: string,
  options: TarSampleOptions,
  onProgress?: (p: ScanProgress) => void,
): Promise<ScannedShard> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(filePath, 'r');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ShardkitError(ErrorCodes.SHARD_MISSING, `${filePath}: no such file`, { file: filePath, cause });
    }
    throw ioError(cause, 'open', filePath);
  }
  try {
    const size = (await handle.stat()).size;
    const collector = new TarSampleCollector(options);
    const scanner = new TarScanner(filePath, collector);
    const buf = Buffer.allocUnsafe(Math.min(SCAN_CHUNK_BYTES, Math.max(size, 1)));
    let crc = 0;
    let fingerprint = 0;
    let pos = 0;
    while (pos < size) {
      let n: number;
      try {
        ({ bytesRead: n } = await handle.read(buf, 0, Math.min(buf.length, size - pos), pos));
      } catch (cause) {
        throw ioError(cause, 'read', filePath);
      }
      if (n === 0) throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${filePath}: file shrank while it was read; run again`, { file: filePath });
      const chunk = buf.subarray(0, n);
      if (pos < FINGERPRINT_BYTES) fingerprint = crc32c(chunk.subarray(0, FINGERPRINT_BYTES - pos), fingerprint);
      crc = crc32c(chunk, crc);
      if (!scanner.ended) scanner.push(chunk);
      pos += n;
      onProgress?.({ file: filePath, bytesDone: pos, bytesTotal: size });
    }
    scanner.finish();
    collector.finish();
    const now = (await handle.stat()).size;
    if (now !== size) throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${filePath}: file changed size while it was read; run again`, { file: filePath });
    return {
      record: { file: options.shardFile, bytes: size, samples: collector.samples, crc32c: crc >>> 0, fingerprint: fingerprint >>> 0 },
      compressedMembers: collector.compressedMembers,
    };
  } finally {
    await handle.close();
  }
}

export interface ScannedShards {
  /** Every sample's index entry, in any order (the sorter sorts). */
  sorter: EntrySorter;
  shards: ShardRecord[];
  compressedMembers: number;
}

/**
 * Scans the tar shards `files` of the dataset directory `dir` in order, then hands the result to `commit` (which
 * writes the index and manifest); the work directory of index runs exists only meanwhile. Shared by `index`
 * (foreign tars) and `reindex` (our own).
 */
export async function scanTarShards<T>(
  dir: string,
  files: readonly string[],
  options: Pick<TarSampleOptions, 'style' | 'lz4' | 'maxKeyBytes' | 'maxMemberBytes' | 'onSkip'>,
  onProgress: ((p: ScanProgress & { shard: number; shards: number }) => void) | undefined,
  commit: (scanned: ScannedShards) => T,
): Promise<T> {
  const workDir = path.join(dir, ADOPT_WORK_DIR);
  fs.rmSync(workDir, { recursive: true, force: true });
  fsCall('create', workDir, () => fs.mkdirSync(workDir));
  try {
    const sorter = new EntrySorter(workDir);
    const shards: ShardRecord[] = [];
    let compressedMembers = 0;
    for (const [i, file] of files.entries()) {
      const scanned = await scanTarFile(
        path.join(dir, file),
        { ...options, shard: i, shardFile: file, onSample: (e) => sorter.add(e) },
        onProgress === undefined ? undefined : (p) => onProgress({ ...p, shard: i, shards: files.length }),
      );
      shards.push(scanned.record);
      compressedMembers += scanned.compressedMembers;
    }
    return commit({ sorter, shards, compressedMembers });
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}
