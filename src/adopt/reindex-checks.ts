/**
 * What `reindex` checks before it writes: that the directory is not an interrupted pack (whose `--resume` a new
 * manifest would end), that the shards still hold the bytes the old manifest recorded (reindex rebuilds an index,
 * it does not bless damage), and, with no manifest to say so, whether the shard names tell which part of a
 * partitioned pack the dataset is.
 */
import fs from 'node:fs';
import path from 'node:path';
import { crc32cHex } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { MANIFEST_FILE, type Manifest } from '../../formats/manifest.js';
import { WORK_DIR, journalPath } from '../pack/journal.js';

/**
 * An interrupted pack (its journal in the work directory, no manifest) is finished by `pack --resume`; a manifest
 * written by reindex over its shards would make the partial data look finished and end that resume.
 */
export function refuseInterruptedPack(dir: string): void {
  if (fs.existsSync(path.join(dir, MANIFEST_FILE)) || !fs.existsSync(journalPath(dir))) return;
  throw new ShardkitError(
    ErrorCodes.OUTPUT_EXISTS,
    `${dir} holds an interrupted pack (${WORK_DIR}/ with its journal, no ${MANIFEST_FILE}): finish it with \`shardkit pack --resume\` (same source and options), or remove ${WORK_DIR}/ to index only the shards it wrote`,
    { file: dir },
  );
}

/** What to do about a shard that no longer holds what the old manifest recorded. */
function shardRemedy(file: string): string {
  return `restore ${file} from a copy, or move ${MANIFEST_FILE} away to index the shards as they are now (damaged bytes would then read as data, and the manifest's passes, files, skipped inputs and extra fields are lost)`;
}

/** Before the scan: each shard the old manifest lists still has the size it recorded (a missing one fails the scan). */
export function checkShardSizes(dir: string, old: Manifest): void {
  for (const s of old.shards) {
    let size: number;
    try {
      size = fs.statSync(path.join(dir, s.file)).size;
    } catch {
      continue;
    }
    if (size !== s.bytes) {
      throw new ShardkitError(ErrorCodes.SHARD_MISMATCH, `${s.file} is ${size} bytes, the manifest says ${s.bytes}; ${shardRemedy(s.file)}`, { file: s.file });
    }
  }
}

/** After the scan: each shard's whole-file CRC32C is the one the old manifest recorded. */
export function checkShardChecksums(old: Manifest, scanned: readonly ShardRecord[]): void {
  for (const [i, record] of scanned.entries()) {
    const want = old.shards[i];
    if (want === undefined || crc32cHex(record.crc32c) === want.crc32c) continue;
    throw new ShardkitError(
      ErrorCodes.CHECKSUM,
      `${record.file}: whole-file CRC32C is ${crc32cHex(record.crc32c)}, the manifest says ${want.crc32c}: the shard was damaged or replaced since it was written; ${shardRemedy(record.file)}`,
      { file: record.file },
    );
  }
}
