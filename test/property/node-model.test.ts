import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { projectNodes, type NodeStrategy, type StrategyTraffic } from '../../src/cache/node-model.js';
import { planEpoch } from '../../src/read/epoch-plan.js';

const of = (rows: StrategyTraffic[], s: NodeStrategy): StrategyTraffic => rows.find((r) => r.strategy === s) as StrategyTraffic;

/** A dataset (shards of 1-6 samples, 10-500 bytes), a shuffle, a node count and a per-node cache size. */
const caseArb = fc
  .record({
    shards: fc.array(fc.record({ samples: fc.integer({ min: 1, max: 6 }), bytes: fc.integer({ min: 10, max: 500 }) }), { minLength: 1, maxLength: 12 }),
    shuffle: fc.constantFrom('none' as const, 'block' as const, 'full' as const),
    seed: fc.integer({ min: 0, max: 1000 }),
    nodes: fc.integer({ min: 1, max: 9 }),
    cacheShare: fc.double({ min: 0, max: 1.5, noNaN: true }),
  })
  .map((c) => {
    const shardSamples = c.shards.map((s) => s.samples);
    const shardBytes = c.shards.map((s) => s.bytes);
    const total = shardBytes.reduce((a, b) => a + b, 0);
    const orders = [0, 1].map((epoch) => planEpoch({ shardSizes: shardSamples, seed: c.seed, epoch, shuffle: c.shuffle }).order);
    return { ...c, shardSamples, shardBytes, total, orders, cacheBytesPerNode: Math.floor(c.cacheShare * total) };
  });

/** Span bytes the nodes read in an epoch, dealt the loader's way (padding repeats the order from its start). */
function readBytes(order: ArrayLike<number>, nodes: number, spans: number[]): number {
  const total = order.length;
  let bytes = 0;
  for (let q = 0; q < Math.ceil(total / nodes) * nodes; q++) bytes += spans[order[q < total ? q : (q - total) % total] as number] as number;
  return bytes;
}

function spansOf(shardSamples: number[], shardBytes: number[]): number[] {
  return shardSamples.flatMap((n, s) => Array.from({ length: n }, () => (shardBytes[s] as number) / n));
}

describe('many nodes as a model (issue #25 part 4)', () => {
  it('exact figures on a hand-worked case: 2 nodes, 2 shards of 2 samples, 100 bytes each, cache of one shard', () => {
    const rows = projectNodes({ shardBytes: [100, 100], shardSamples: [2, 2], orders: [[0, 1, 2, 3]], nodes: 2, cacheBytesPerNode: 100 });
    // node 0 reads 0, 2; node 1 reads 1, 3 (spans of 50 bytes)
    expect(of(rows, 'none').epochs).toEqual([{ remoteBytes: 200, remoteRequests: 4, peerBytes: 0, localBytes: 0 }]);
    // each node fetches shard 0 then shard 1 whole (the second evicts the first, or it is read by range under MIN)
    expect(of(rows, 'per-node-lru').epochs).toEqual([{ remoteBytes: 400, remoteRequests: 4, peerBytes: 0, localBytes: 200 }]);
    // MIN: shard 1 is not read again, and evicting shard 0 for it gains nothing: its sample is read by range
    expect(of(rows, 'per-node-min').epochs).toEqual([{ remoteBytes: 300, remoteRequests: 4, peerBytes: 0, localBytes: 100 }]);
    // shard 0 on node 0, shard 1 on node 1 (node 0 is full): each fetched once; each node reads one sample from the other
    expect(of(rows, 'placement').epochs).toEqual([{ remoteBytes: 200, remoteRequests: 2, peerBytes: 100, localBytes: 100 }]);
  });

  it('no cache: every node reads its dealt spans, whatever the node count', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const rows = projectNodes({ ...c, nodes: c.nodes });
        const spans = spansOf(c.shardSamples, c.shardBytes);
        of(rows, 'none').epochs.forEach((e, i) => {
          expect(e.remoteBytes).toBeCloseTo(readBytes(c.orders[i] as Uint32Array, c.nodes, spans), 6);
          expect(e.peerBytes).toBe(0);
        });
      }),
    );
  });

  it('a cache of 0 bytes: per-node caches and placement read exactly what no cache reads', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const rows = projectNodes({ ...c, cacheBytesPerNode: 0 });
        const none = of(rows, 'none').epochs;
        expect(of(rows, 'placement').epochs).toEqual(none);
        for (const s of ['per-node-lru', 'per-node-min'] as const) of(rows, s).epochs.forEach((e, i) => expect(e.remoteBytes).toBeCloseTo(none[i]?.remoteBytes ?? NaN, 6));
      }),
    );
  });

  it('caches that hold the dataset: each node fetches the shards it reads once, the next epoch fetches nothing; placement fetches each shard once in all', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const rows = projectNodes({ ...c, cacheBytesPerNode: c.total });
        const shardOf = c.shardSamples.flatMap((n, s) => Array.from({ length: n }, () => s));
        /** The shards node r reads in epoch e. */
        const touched = (r: number, e: number): Set<number> => {
          const mine = new Set<number>();
          const order = c.orders[e] as Uint32Array;
          for (let q = r; q < Math.ceil(order.length / c.nodes) * c.nodes; q += c.nodes) mine.add(shardOf[order[q < order.length ? q : (q - order.length) % order.length] as number] as number);
          return mine;
        };
        let first = 0;
        let second = 0;
        for (let r = 0; r < c.nodes; r++) {
          const before = touched(r, 0);
          for (const s of before) first += c.shardBytes[s] as number;
          for (const s of touched(r, 1)) if (!before.has(s)) second += c.shardBytes[s] as number;
        }
        for (const s of ['per-node-lru', 'per-node-min'] as const) {
          expect(of(rows, s).epochs[0]?.remoteBytes).toBe(first);
          // only shards this node did not read the epoch before (with one node: none)
          expect(of(rows, s).epochs[1]?.remoteBytes).toBe(second);
          if (c.nodes === 1) expect(second).toBe(0);
        }
        expect(of(rows, 'placement').epochs[0]).toMatchObject({ remoteBytes: c.total, remoteRequests: c.shardBytes.length });
        expect(of(rows, 'placement').epochs[1]).toMatchObject({ remoteBytes: 0, remoteRequests: 0 });
      }),
    );
  });

  it('placement: with room for the dataset over all nodes (plus a shard each), no remote byte after the first epoch', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const cap = Math.ceil(c.total / c.nodes) + Math.max(...c.shardBytes);
        const later = of(projectNodes({ ...c, cacheBytesPerNode: cap }), 'placement').epochs[1];
        expect(later).toMatchObject({ remoteBytes: 0, remoteRequests: 0 });
      }),
    );
  });

  it('shards of one size: MIN never fetches more bytes than LRU (Belady with bypass is optimal in misses)', () => {
    fc.assert(
      fc.property(caseArb, fc.integer({ min: 1, max: 5 }), (c, slots) => {
        const shardBytes = c.shardBytes.map(() => 120);
        const rows = projectNodes({ ...c, shardBytes, cacheBytesPerNode: slots * 120 });
        const sum = (s: NodeStrategy): number => of(rows, s).epochs.reduce((n, e) => n + e.remoteBytes, 0);
        expect(sum('per-node-min')).toBeLessThanOrEqual(sum('per-node-lru') + 1e-6);
      }),
    );
  });

  it('one node: after the first epoch, no cache policy fetches less than the dataset minus the cache (what bounds MIN against LRU)', () => {
    // A shard read with no fetch in an epoch was in the cache when the epoch began; all such shards fit at once.
    fc.assert(
      fc.property(caseArb, (c) => {
        const rows = projectNodes({ ...c, nodes: 1 });
        for (const s of ['per-node-lru', 'per-node-min'] as const) {
          expect(of(rows, s).epochs[1]?.remoteBytes ?? 0).toBeGreaterThanOrEqual(c.total - c.cacheBytesPerNode - 1e-6);
        }
      }),
    );
  });

  it('refuses a node count outside 1..1024 and an order of another length', () => {
    expect(() => projectNodes({ shardBytes: [1], shardSamples: [1], orders: [[0]], nodes: 0, cacheBytesPerNode: 1 })).toThrow(/between 1 and 1024 for nodes/);
    expect(() => projectNodes({ shardBytes: [1], shardSamples: [1], orders: [[0]], nodes: 1025, cacheBytesPerNode: 1 })).toThrow(/between 1 and 1024 for nodes/);
    expect(() => projectNodes({ shardBytes: [1], shardSamples: [2], orders: [[0]], nodes: 1, cacheBytesPerNode: 1 })).toThrow(/1 samples, the shards 2/);
  });
});
