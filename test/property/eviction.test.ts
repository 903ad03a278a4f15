import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chooseVictims, chooseVictimsAhead, evictionOrder, type AheadCandidate, type EvictionCandidate } from '../../src/cache/eviction.js';

const candidateArb = fc.record({
  bytes: fc.integer({ min: 1, max: 1000 }),
  nextUse: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constant(Infinity)),
  lastUse: fc.integer({ min: 0, max: 100 }),
});
const candidatesArb = fc.array(candidateArb, { maxLength: 12 }).map((cs) => cs.map((c, i): EvictionCandidate => ({ ...c, id: `s${String(i).padStart(2, '0')}` })));

/** Fewest misses any policy can have for `requests` with room for `capacity` unit shards (search over cache states). */
function optimalMisses(requests: number[], capacity: number): number {
  let states = new Map<string, number>([['', 0]]);
  for (const r of requests) {
    const next = new Map<string, number>();
    const put = (set: number[], misses: number): void => {
      const key = [...set].sort((a, b) => a - b).join(',');
      if ((next.get(key) ?? Infinity) > misses) next.set(key, misses);
    };
    for (const [key, misses] of states) {
      const set = key === '' ? [] : key.split(',').map(Number);
      if (set.includes(r)) put(set, misses);
      else if (set.length < capacity) put([...set, r], misses + 1);
      else {
        put(set, misses + 1); // read it without caching
        for (const v of set) put([...set.filter((x) => x !== v), r], misses + 1);
      }
    }
    states = next;
  }
  return Math.min(...states.values());
}

/** Misses of a cache of `capacity` unit shards that asks chooseVictims, with next uses taken from `requests`. */
function simulatedMisses(requests: number[], capacity: number): number {
  const cached = new Map<number, number>(); // shard -> last use
  let misses = 0;
  requests.forEach((r, t) => {
    const nextUse = (s: number): number => {
      const i = requests.indexOf(s, t + 1);
      return i < 0 ? Infinity : i;
    };
    if (cached.has(r)) {
      cached.set(r, t);
      return;
    }
    misses++;
    const candidates = [...cached].map(([s, last]): EvictionCandidate => ({ id: String(s), bytes: 1, nextUse: nextUse(s), lastUse: last }));
    const victims = chooseVictims(candidates, candidates.length + 1 - capacity, nextUse(r));
    if (victims === undefined) return; // read without caching: every cached shard is needed sooner
    for (const v of victims) cached.delete(Number(v.id));
    cached.set(r, t);
  });
  return misses;
}

/**
 * Fetches of a cache of `capacity` unit shards that, before each read, prefetches the shards of the next `ahead`
 * reads in order of first use (as CachePlan.advance does; a refused prefetch is skipped, the later ones still
 * tried), asking chooseVictimsAhead, and fetches on a miss asking chooseVictims.
 */
function simulatedFetchesWithPrefetch(requests: number[], capacity: number, ahead: number): number {
  const cached = new Set<number>();
  let fetches = 0;
  const nextUse = (s: number, from: number): number => {
    const i = requests.indexOf(s, from);
    return i < 0 ? Infinity : i;
  };
  requests.forEach((r, t) => {
    for (let j = t; j < Math.min(requests.length, t + ahead); j++) {
      const s = requests[j] as number;
      if (cached.has(s) || nextUse(s, t) !== j) continue;
      const candidates = [...cached].map((c): AheadCandidate => ({ id: String(c), bytes: 1, lastUse: 0, nextUse: nextUse(c, t), nextUseThen: nextUse(c, j) }));
      const victims = chooseVictimsAhead(candidates, cached.size + 1 - capacity, j, nextUse(s, j + 1));
      if (victims === undefined) continue;
      for (const v of victims) cached.delete(Number(v.id));
      cached.add(s);
      fetches++;
    }
    if (cached.has(r)) return;
    fetches++;
    const candidates = [...cached].map((c): EvictionCandidate => ({ id: String(c), bytes: 1, nextUse: nextUse(c, t + 1), lastUse: 0 }));
    const victims = chooseVictims(candidates, candidates.length + 1 - capacity, nextUse(r, t + 1));
    if (victims === undefined) return;
    for (const v of victims) cached.delete(Number(v.id));
    cached.add(r);
  });
  return fetches;
}

describe('eviction (Belady MIN over the plan, LRU outside it)', () => {
  it('never evicts a shard needed sooner than one it keeps, nor one needed before the shard it makes room for', () => {
    fc.assert(
      fc.property(candidatesArb, fc.integer({ min: 0, max: 5000 }), fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constant(Infinity)), (candidates, need, forUse) => {
        const victims = chooseVictims(candidates, need, forUse);
        if (victims === undefined) {
          // nothing fits: then even evicting every allowed candidate frees too little
          const allowed = candidates.filter((c) => !(Number.isFinite(c.nextUse) && c.nextUse <= forUse));
          expect(allowed.reduce((n, c) => n + c.bytes, 0)).toBeLessThan(need);
          return;
        }
        const freed = victims.reduce((n, c) => n + c.bytes, 0);
        expect(freed).toBeGreaterThanOrEqual(need);
        if (victims.length > 0) expect(freed - (victims.at(-1) as EvictionCandidate).bytes).toBeLessThan(need); // no more than needed
        const ids = new Set(victims.map((v) => v.id));
        const kept = candidates.filter((c) => !ids.has(c.id));
        for (const v of victims) {
          if (Number.isFinite(v.nextUse)) expect(v.nextUse).toBeGreaterThan(forUse);
          for (const k of kept) {
            if (!Number.isFinite(k.nextUse)) expect(Number.isFinite(v.nextUse)).toBe(false); // unplanned go first
            else if (Number.isFinite(v.nextUse)) expect(v.nextUse).toBeGreaterThanOrEqual(k.nextUse);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('outside the plan, the least recently used goes first', () => {
    fc.assert(
      fc.property(candidatesArb, (candidates) => {
        const unplanned = evictionOrder(candidates).filter((c) => !Number.isFinite(c.nextUse));
        for (let i = 1; i < unplanned.length; i++) expect((unplanned[i] as EvictionCandidate).lastUse).toBeGreaterThanOrEqual((unplanned[i - 1] as EvictionCandidate).lastUse);
      }),
    );
  });

  it('over a known sequence of shard reads, misses as few times as the best possible policy', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 14 }), fc.integer({ min: 1, max: 4 }), (requests, capacity) => {
        expect(simulatedMisses(requests, capacity)).toBe(optimalMisses(requests, capacity));
      }),
      { numRuns: 300 },
    );
  });

  it('prefetching ahead with chooseVictimsAhead fetches no more often than the best possible policy', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 14 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 8 }), (requests, capacity, ahead) => {
        expect(simulatedFetchesWithPrefetch(requests, capacity, ahead)).toBe(optimalMisses(requests, capacity));
      }),
      { numRuns: 500 },
    );
  });

  it('a prefetch evicts what MIN would when its shard is read, or nothing when that is a shard still read before', () => {
    const c = (id: string, nextUse: number, nextUseThen: number): AheadCandidate => ({ id, bytes: 1, lastUse: 0, nextUse, nextUseThen });
    // b is read at 3 (before the prefetched shard, at 5), then not until 40: MIN at 5 evicts b, not a (read at 20)
    expect(chooseVictimsAhead([c('a', 20, 20), c('b', 3, 40)], 1, 5)).toBeUndefined();
    expect(chooseVictims([c('a', 20, 20), c('b', 3, 40)], 1, 5)?.map((v) => v.id)).toEqual(['a']); // what a read must do now
    // once b's reads are done, the prefetch evicts b
    expect(chooseVictimsAhead([c('a', 20, 20), c('b', 40, 40)], 1, 5)?.map((v) => v.id)).toEqual(['b']);
    // free room: nothing evicted; outside the plan: LRU first
    expect(chooseVictimsAhead([c('a', 20, 20)], 0, 5)).toEqual([]);
    expect(chooseVictimsAhead([c('a', 20, 20), { ...c('x', Infinity, Infinity), lastUse: 7 }], 1, 5)?.map((v) => v.id)).toEqual(['x']);
  });
});
