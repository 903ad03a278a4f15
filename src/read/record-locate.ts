/**
 * Locating a batch's records through the index asynchronously (remote datasets, where an index page not yet cached is
 * an http request of its own): positions are looked up in ascending order, so each index page is fetched once.
 */
import type { Dataset } from './dataset.js';
import { closedError } from './read-ahead.js';
import { recordRef, type RecordRef } from './record-ref.js';

/**
 * The records at `positions` (key order), in the order given, each checked as the dataset checks entries (a damaged
 * index fails here, naming the sample). `limit` bounds the page lookups in flight; once `stopped()` says so, no more
 * lookups start (the work of a closed loader fails with CLOSED, which nobody receives).
 */
export async function locateAsync(ds: Dataset, positions: readonly number[], limit: <T>(fn: () => Promise<T>) => Promise<T>, stopped: () => boolean): Promise<RecordRef[]> {
  const byPosition = positions.map((_, i) => i).sort((a, b) => (positions[a] as number) - (positions[b] as number));
  const refs = new Array<RecordRef>(positions.length);
  for (const i of byPosition) {
    if (stopped()) throw closedError();
    const position = positions[i] as number;
    const hit = await limit(() => ds.index.leafOf(position));
    ds.checkRecord(hit.leaf, position - hit.base);
    refs[i] = recordRef(hit.leaf, position - hit.base);
  }
  return refs;
}
