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
import { MANIFEST_FILE, type Manifest, type ManifestPart } from '../../formats/manifest.js';
import { WORK_DIR, journalPath } from '../pack/journal.js';
import { partShardPrefix } from '../pack/partition.js';

/**
 * An interrupted pack (its journal in the work directory, no manifest) is finished by `pack --resume`; a manifest
 * written by reindex over its shards would make the partial data look finished and end that resume.
 */
export function refuseInterruptedPack(dir: string): void {
  if (fs.existsSync(path.join(dir, MANIFEST_FILE)) || !fs.existsSync(journalPath(dir))) return;
  throw new ShardkitError(
    ErrorCodes.OUTPUT_EXISTS,
    `${dir} holds an interrupted pack (${WORK_DIR}/ with its journal, no ${MANIFEST_FILE}): finish it with \`shardkit pack --resume\` (or \`derive --resume\`, with the same source and options), or remove ${WORK_DIR}/ to index only the shards it wrote`,
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

const PART_SHARD = /^part-(\d+)-of-(\d+)-shard-\d{6}\.tar$/;

export interface PartFromNames {
  /** The part every shard name says the dataset is. */
  part?: ManifestPart;
  /** What the names said that could not be kept (shown in the summary), when they do not agree on one part. */
  note?: string;
}

/**
 * With no manifest to say so, which part of a partitioned pack the shards are: `pack --part I/N` (and `derive` of a
 * part) name every shard `part-I-of-N-shard-NNNNNN.tar`, I 0-based and zero-padded to the width of N-1, as
 * {@link partShardPrefix} makes it. Every name must carry that one prefix; shards of several parts (a merged
 * dataset) are a whole dataset; other mixes are recorded as one too, and the note says what was not kept.
 */
export function partFromShardNames(files: readonly string[]): PartFromNames {
  const parsed = files.map((f) => {
    const m = PART_SHARD.exec(f);
    if (m === null) return undefined;
    const part = { index: Number(m[1]), count: Number(m[2]) };
    const valid = Number.isSafeInteger(part.count) && part.count >= 1 && part.index < part.count && f.startsWith(partShardPrefix(part));
    return valid ? part : undefined;
  });
  const parts = parsed.filter((p): p is ManifestPart => p !== undefined);
  if (parts.length === 0 && !files.some((f) => f.startsWith('part-'))) return {};
  const distinct = [...new Set(parts.map((p) => `${p.index}/${p.count}`))];
  if (parts.length === files.length && distinct.length === 1) return { part: parts[0] as ManifestPart };
  if (parts.length === files.length && new Set(parts.map((p) => p.count)).size === 1) return {}; // a merge of parts
  const odd = files.filter((_, i) => parsed[i] === undefined);
  const why = odd.length > 0 ? `${odd.length} of ${files.length} shard names (${odd[0]}) are not part-I-of-N-shard-NNNNNN.tar` : `the shard names mix parts ${distinct.slice(0, 4).join(', ')}`;
  return { note: `part unknown: ${why}; recorded as a whole dataset (merge takes it only with other whole datasets)` };
}
