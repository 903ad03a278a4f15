/**
 * Where an `append` stages its work, inside the dataset directory: `.shardkit-append/` holds `target.json` (which
 * dataset version the append extends, written first), `new/` (the new samples packed as a dataset of their own,
 * with pack's journal, so a kill there resumes as a pack does), `kept/` (the same less the keys the dataset already
 * had, with `--on-error skip`) and the merged index while it is built. Nothing the dataset's manifest lists is
 * touched before the commit; see formats/SPEC.md ("Append").
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { fsCall } from './fs-errors.js';
import { writeAtomically } from './commit.js';

export const APPEND_DIR = '.shardkit-append';
const TARGET_FILE = 'target.json';

/** What an append extends and the options that decide its bytes: a resume must find the same. */
export interface AppendTarget {
  /** The dataset's index CRC32C and sample count before the append. */
  baseIndex: string;
  baseSamples: number;
  /** The dataset's index file before the append: kept until the next append (readers may still be reading it). */
  previousIndex: string;
  /** This append's number (from 1) and its index file, `index-<n>.skidx`. */
  append: number;
  indexFile: string;
  /** The number of the first new shard: the dataset's shard count. */
  firstShard: number;
  shardBytes: number;
  onError: 'fail' | 'skip';
}

export interface StagePaths {
  root: string;
  /** The new samples, packed. */
  added: string;
  /** The new samples less the duplicates (`--on-error skip`). */
  kept: string;
  target: string;
}

export function stagePaths(dataset: string): StagePaths {
  const root = path.join(dataset, APPEND_DIR);
  return { root, added: path.join(root, 'new'), kept: path.join(root, 'kept'), target: path.join(root, TARGET_FILE) };
}

export function readTarget(stage: StagePaths): AppendTarget | undefined {
  if (!fs.existsSync(stage.target)) return undefined;
  try {
    const t = JSON.parse(fs.readFileSync(stage.target, 'utf8')) as AppendTarget;
    if (typeof t.baseIndex !== 'string' || !Number.isSafeInteger(t.append) || !Number.isSafeInteger(t.firstShard) || typeof t.indexFile !== 'string') throw new Error('malformed');
    return t;
  } catch (cause) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${stage.target}: the record of an interrupted append is damaged; start over with --force`, { file: stage.target, cause });
  }
}

export function writeTarget(stage: StagePaths, target: AppendTarget): void {
  fsCall('create', stage.root, () => fs.mkdirSync(stage.root, { recursive: true }));
  writeAtomically(stage.target, new TextEncoder().encode(`${JSON.stringify(target)}\n`));
}

export function removeStage(stage: StagePaths): void {
  fsCall('remove', stage.root, () => fs.rmSync(stage.root, { recursive: true, force: true }));
}
