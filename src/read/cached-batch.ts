/**
 * A remote batch whose bytes all sit in the node-local shard cache, read the way local batches are: synchronously,
 * from the copies' memory maps, index records taken from decoded pages. Through the remote path a fully cached epoch
 * cost 4-6x the CPU of local disk (an async index lookup per sample, windowed reads into fresh buffers, promise
 * chains); this path is taken for a batch only when every index page it needs is decoded and every shard it reads has
 * a ready, verified copy in this process (or a copy its proof lets this process open now), checked in the same
 * synchronous call that reads it. Any other batch goes
 * through the remote path (which fetches what is missing), so a copy evicted meanwhile is never read here.
 */
import { isShardkitError } from '../../formats/errors.js';
import { recordRef, type RecordRef } from './record-ref.js';
import type { Dataset } from './dataset.js';

/**
 * The located records of the rank's samples `first` .. `first + count - 1` (`at(i)`: the position of its i-th
 * sample), checked as the loader checks records; undefined unless the dataset has a shard cache, every index page
 * of the lookups is decoded, and every shard read has a ready copy.
 */
export function locateCached(ds: Dataset, at: (i: number) => number, first: number, count: number): RecordRef[] | undefined {
  const cache = ds.cache;
  if (cache === undefined) return undefined;
  const refs = new Array<RecordRef>(count);
  let ready = -1; // the last shard found ready: runs of a shard's samples ask once
  for (let i = 0; i < count; i++) {
    const position = at(first + i);
    const hit = ds.index.leafOfIfCached(position);
    if (hit === undefined) return undefined;
    const slot = position - hit.base;
    ds.checkRecord(hit.leaf, slot);
    const ref = recordRef(hit.leaf, slot);
    if (ref.shard !== ready) {
      if (!cache.readyNow(ref.shard)) return undefined;
      ready = ref.shard;
    }
    refs[i] = ref;
  }
  return refs;
}

/** Whether every shard `refs` read has a ready copy now (ShardCache.readyNow): a located batch is then read as above. */
export function allCached(ds: Dataset, refs: readonly RecordRef[]): boolean {
  const cache = ds.cache;
  if (cache === undefined) return false;
  for (const ref of refs) if (!cache.readyNow(ref.shard)) return false;
  return true;
}

/**
 * `read()`, and when it fails because a member read from a copy in the shard cache failed its check (damaged on disk
 * after the copy was checked: the copy is then suspected, ShardCache.suspect), `again()`: a read through the cache's
 * async path, which checks the copy whole, removes it (said once) and reads the shard from the source, fetching it
 * anew. A damaged copy then costs a read again, never a failed read nor wrong bytes. When `again()` fails too, its
 * error is thrown: the source's own bytes are damaged.
 */
export function readAgainIfDamaged<T>(ds: Dataset, read: () => T | Promise<T>, again: () => T | Promise<T>): T | Promise<T> {
  const cache = ds.cache;
  if (cache === undefined) return read();
  const suspects = cache.suspects;
  const retry = (err: unknown): T | Promise<T> => {
    if (cache.suspects === suspects || !isShardkitError(err)) throw err;
    return again();
  };
  let result: T | Promise<T>;
  try {
    result = read();
  } catch (err) {
    return retry(err);
  }
  return result instanceof Promise ? result.catch(retry) : result;
}
