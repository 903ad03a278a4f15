import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chooseVictims, evictionOrder, type EvictionCandidate } from '../../src/cache/eviction.js';

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
});
