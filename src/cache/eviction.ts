/**
 * Which cached shards to evict to make room: Belady's MIN over the loader's known order, LRU for the rest.
 *
 * A shard the plan reads again is kept over any shard it does not: among planned shards, the one whose next use lies
 * furthest in the future goes first (MIN: the fewest fetches for a known order); shards outside the plan (another
 * dataset's, or read by `get` or another loader) go before every planned one, least recently used first.
 */

export interface EvictionCandidate {
  /** Anything that names the file (the caller's key). */
  id: string;
  bytes: number;
  /** When the plan reads it next (a sample index, smaller is sooner); Infinity when the plan does not read it. */
  nextUse: number;
  /** When it was last used (ms since the epoch, e.g. the file's mtime): for shards outside the plan. */
  lastUse: number;
}

/** Eviction order: outside the plan first (oldest use first), then planned ones from the furthest next use. */
export function evictionOrder(candidates: readonly EvictionCandidate[]): EvictionCandidate[] {
  return [...candidates].sort((a, b) => {
    const aPlanned = Number.isFinite(a.nextUse);
    const bPlanned = Number.isFinite(b.nextUse);
    if (aPlanned !== bPlanned) return aPlanned ? 1 : -1;
    if (!aPlanned) return a.lastUse - b.lastUse || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    return b.nextUse - a.nextUse || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  });
}

/**
 * The fewest candidates, taken in {@link evictionOrder}, whose bytes free at least `need` bytes; undefined when
 * all of them together do not. A candidate needed sooner than the shard being made room for (`forUse`) is never
 * evicted for it: MIN keeps the sooner one, so the caller then reads that shard without caching it.
 */
export function chooseVictims(candidates: readonly EvictionCandidate[], need: number, forUse = Infinity): EvictionCandidate[] | undefined {
  if (need <= 0) return [];
  const victims: EvictionCandidate[] = [];
  let freed = 0;
  for (const c of evictionOrder(candidates)) {
    if (c.nextUse <= forUse && Number.isFinite(c.nextUse)) break;
    victims.push(c);
    freed += c.bytes;
    if (freed >= need) return victims;
  }
  return undefined;
}
