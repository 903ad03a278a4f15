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
export function evictionOrder<C extends EvictionCandidate>(candidates: readonly C[]): C[] {
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
export function chooseVictims<C extends EvictionCandidate>(candidates: readonly C[], need: number, forUse = Infinity): C[] | undefined {
  if (need <= 0) return [];
  const victims: C[] = [];
  let freed = 0;
  for (const c of evictionOrder(candidates)) {
    if (c.nextUse <= forUse && Number.isFinite(c.nextUse)) break;
    victims.push(c);
    freed += c.bytes;
    if (freed >= need) return victims;
  }
  return undefined;
}

/** A candidate as a prefetch sees it: its next use from now, and from the time the prefetched shard is read. */
export interface AheadCandidate extends EvictionCandidate {
  /** Its first use at or after that time (Infinity: none); `nextUse` stays its first use from now. */
  nextUseThen: number;
}

/**
 * The victims for a prefetch of a shard first read at `at`: exactly those MIN would evict at that time (ranked by
 * their uses from then on; none read before the shard's use after `at`, `forUse`, as {@link chooseVictims});
 * undefined when MIN would then evict a shard the plan still reads before `at`, or nothing frees enough. Such a
 * prefetch is premature: it would evict a shard MIN keeps, where waiting lets the other shard's reads finish and MIN
 * evict it instead. (Without this rule, prefetching up to half the cache ahead fetched 15-20 % more than MIN per
 * epoch: block shuffle, half the dataset cached, bench/cache.mjs.)
 */
export function chooseVictimsAhead(candidates: readonly AheadCandidate[], need: number, at: number, forUse = at): AheadCandidate[] | undefined {
  const then = candidates.map((c) => ({ ...c, nextUse: c.nextUseThen, now: c }));
  const victims = chooseVictims(then, need, forUse);
  if (victims === undefined || victims.some((v) => v.now.nextUse < at)) return undefined;
  return victims.map((v) => v.now);
}
