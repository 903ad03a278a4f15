/**
 * What `reindex` checks before it writes: that the directory is not an interrupted pack (whose `--resume` a new
 * manifest would end), that the shards still hold the bytes the old manifest recorded (reindex rebuilds an index,
 * it does not bless damage), and, with no manifest to say so, whether the shard names tell which part of a
 * partitioned pack the dataset is.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { MANIFEST_FILE } from '../../formats/manifest.js';
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
