/**
 * How a DatasetWriter takes over an interrupted write (`resume: true`): the options its journal must match, the
 * journal's shard lines summed back into the state of the writer that wrote them, and the work files the killed
 * writer left put back to work (sorted runs past the last finished shard deleted, a finished index turned back into
 * the live one).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { INDEX_FILE } from './commit.js';
import type { DatasetWriterOptions, ValidOptions } from './dataset-writer-options.js';
import { fsCall } from './fs-errors.js';
import type { IndexCheckpoint } from './index-file.js';
import type { InputRange } from './input-proof.js';
import type { JournalShard } from './journal.js';
import type { SkippedInput } from './skipped.js';

/** The options a write's journal records (see JournalBegin): a resume with any other value is refused. */
export function decisiveOptions(o: ValidOptions, options: DatasetWriterOptions): Record<string, unknown> {
  return {
    layout: o.layout,
    compress: o.compress,
    shardBytes: o.shardBytes,
    pageSize: o.pageSize,
    shardPrefix: o.shardPrefix,
    // only when set: journals of packs stay as they were
    ...(o.firstShard === 0 ? {} : { firstShard: o.firstShard }),
    passes: o.passes,
    ...(options.resumeOptions === undefined ? {} : { input: options.resumeOptions }),
    ...(options.preparedDigest === undefined ? {} : { prepared: options.preparedDigest }),
    ...(options.sourceDigest === undefined ? {} : { source: options.sourceDigest }),
  };
}

/** An interrupted write as its journal's shard lines leave it (a fresh write: no lines, nothing written). */
export interface ResumedWrite {
  /** The finished shards. */
  shards: ShardRecord[];
  /** The inputs skipped, in the order they came. */
  skipped: SkippedInput[];
  /** Sums over the finished shards, for the writer's stats. */
  totals: { samples: number; members: number; originalBytes: number; storedBytes: number };
  /** Sorted run files that hold the index entries of the finished shards. */
  runs: number;
  /** The live index's last checkpoint, when the write was building its index as entries came. */
  index: IndexCheckpoint | undefined;
  /** What proves the input consumed unchanged (see input-proof.ts); empty when a line holds no proof. */
  inputs: InputRange[];
  /** Input samples consumed (added or skipped). */
  cursor: number;
  /** The last sample written and its input position. */
  last: { key: string; at: number } | undefined;
}

/** Sums a journal's shard lines (each holds what changed since the line before it). */
export function sumJournal(lines: readonly JournalShard[]): ResumedWrite {
  const done: ResumedWrite = {
    shards: [],
    skipped: [],
    totals: { samples: 0, members: 0, originalBytes: 0, storedBytes: 0 },
    runs: 0,
    index: undefined,
    inputs: [],
    cursor: 0,
    last: undefined,
  };
  for (const line of lines) {
    done.shards.push(line.shard);
    done.skipped.push(...line.skipped);
    done.totals.samples += line.shard.samples;
    done.totals.members += line.members;
    done.totals.originalBytes += line.originalBytes;
    done.totals.storedBytes += line.storedBytes;
    done.runs = line.runs;
    done.index = line.index;
    if (line.inputs !== undefined && line.since !== undefined) done.inputs.push({ end: line.cursor, inputs: line.inputs, since: line.since });
    done.cursor = line.cursor;
    if (line.last !== undefined) done.last = line.last;
  }
  // a journal with a line without proof (an earlier version's, derive's) proves nothing
  if (done.inputs.length !== lines.length) done.inputs.length = 0;
  return done;
}

/** Deletes the sorted runs past the first `keep` (written after the last finished shard) and any merge's files. */
export function removeStaleRuns(workDir: string, keep: number): void {
  for (const name of fs.readdirSync(workDir)) {
    const m = /^run-(\d+)\.bin$/.exec(name);
    if ((m && Number(m[1]) >= keep) || /^merge-\d+\.bin$/.test(name)) fs.rmSync(path.join(workDir, name), { force: true });
  }
}

/**
 * Makes sure the live index of a write resumed at an index checkpoint is at `tmpPath`. A writer killed after the
 * finished index was renamed into place but before the manifest left it in `dir`: that file is the live index at its
 * last checkpoint plus the end a resume rewrites anyway (header, shard table), so it goes back to work.
 * @throws ShardkitError INVALID_ARG when neither file is there.
 */
export function reclaimLiveIndex(dir: string, tmpPath: string): void {
  const finished = path.join(dir, INDEX_FILE);
  if (!fs.existsSync(tmpPath) && fs.existsSync(finished)) fsCall('rename', finished, () => fs.renameSync(finished, tmpPath));
  if (!fs.existsSync(tmpPath)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${dir}: the index of the interrupted pack is missing; start over with --force`, { file: dir });
}
