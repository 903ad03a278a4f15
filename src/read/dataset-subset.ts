/**
 * A part of a dataset as a mixture source: the samples one append brought (or the pack, before any append), found
 * by one scan of the index in key order (the merged index interleaves old and new keys). Positions are key-order
 * positions of the whole dataset; the subset is their ascending list, 4 bytes per sample.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { Manifest } from '../../formats/manifest.js';
import type { Dataset } from './dataset.js';

/**
 * The shard numbers `[first, end)` of task `task` of a grown dataset: task 0 is what the pack made, task t >= 1 what
 * the t-th append brought (manifest.appends[t - 1]).
 * @throws ShardkitError INVALID_ARG for a task the dataset does not have.
 */
export function taskShards(m: Manifest, task: number): [number, number] {
  const appends = m.appends ?? [];
  if (!Number.isSafeInteger(task) || task < 0 || task > appends.length) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a task between 0 and ${appends.length} (the pack, then one per append) but received ${String(task)}`);
  }
  if (task === 0) return [0, appends[0]?.shards[0] ?? m.shards.length];
  return (appends[task - 1] as { shards: [number, number] }).shards;
}

/** Positions (ascending) of the samples stored in shards `[first, end)`. */
export async function shardRangePositions(ds: Dataset, [first, end]: [number, number]): Promise<Uint32Array> {
  const out: number[] = [];
  for await (const e of ds.entries()) if (e.shard >= first && e.shard < end) out.push(e.position);
  return Uint32Array.from(out);
}
