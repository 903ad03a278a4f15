/**
 * A MODEL, not a measurement: remote bytes and requests per epoch when N nodes (one rank each) train on one dataset
 * kept in one remote store, under four strategies (issue #25, part 4):
 *
 * - `none`: no cache. Each node reads the spans of its samples; one request per run of samples adjacent in storage
 *   that the node reads one after the other. (The loader's windowed reads coalesce across small gaps: fewer
 *   requests, at most 1.1x the bytes with none/block shuffles and 1.5x with full.)
 * - `per-node-lru` / `per-node-min`: each node caches whole shards it reads, in `cacheBytesPerNode`. A miss fetches
 *   the shard whole (one request per download chunk). LRU evicts the least recently used. MIN evicts the shard its
 *   own order reads furthest ahead; when every cached shard is read sooner than the missed one, it reads the sample
 *   with a range request instead (as the shard cache does).
 * - `placement` (the seed paper's): the order of every rank is a function of the seed, so every node computes the
 *   same assignment with no metadata exchanged. Before each epoch, each shard is held by the node that reads most of
 *   its samples that epoch, within `cacheBytesPerNode` (ties: the lower node; a node with no room passes the shard
 *   to the next reader, then to the node with the most room). A node reads its own shards locally, other held
 *   shards from their holder (peer bytes), and shards no node holds from the remote. A shard held by another node
 *   the epoch before is moved from it (peer bytes); only a shard no node held is fetched from the remote.
 *
 * What bounds clairvoyance (one node, any order): a shard read in an epoch without a fetch was cached when the epoch
 * began, and all such shards fit in the cache at once, so every policy fetches at least (dataset - cache) per epoch
 * after the first. LRU fetches at most about the dataset when each shard is read in one burst (block shuffle). So
 * MIN / LRU >= (1 - cache share): with a 25 % cache and block shuffle, 0.75 at best; the model gives 0.80 (LRU 0.97x,
 * MIN 0.78x the dataset per epoch, 36 shards of 256 KiB, 5 seeds), the 0.7x goal needs a cache of at least 30 %
 * (50 %: 0.60). Property-tested in test/property/node-model.test.ts. The shard cache itself (bench/cache.mjs, 2,000
 * samples in 26 shards, epochs 1-2, 3 runs): 0.59-0.60 at 50 %, where it fetches what MIN does; 0.70-0.86 at 25 %,
 * at times below the bound: the samples of shards it does not admit are read with ranges, without tar headers.
 *
 * Pure: no I/O. Orders come from planEpoch (the same order for any node count); nodes are dealt samples as the
 * loader deals ranks: node r reads order[r + i*N], padded by repeating the order from its start.
 */

export type NodeStrategy = 'none' | 'per-node-lru' | 'per-node-min' | 'placement';
export const NODE_STRATEGIES: readonly NodeStrategy[] = ['none', 'per-node-lru', 'per-node-min', 'placement'];

export interface NodeModelInput {
  /** Bytes of each shard. */
  shardBytes: readonly number[];
  /** Samples of each shard; shard s holds the positions right after shard s-1's. */
  shardSamples: readonly number[];
  /** Bytes one read of sample p costs (its span). Default: its shard's bytes / samples. */
  sampleBytes?: readonly number[];
  /** The order of each modelled epoch, in sequence (planEpoch(...).order); caches carry over between them. */
  orders: readonly ArrayLike<number>[];
  /** Nodes, one rank each (1..1024). */
  nodes: number;
  /** Cache size of every node. */
  cacheBytesPerNode: number;
  /** A whole-shard download takes ceil(bytes / this) requests. Default 8 MiB (the shard cache's chunk). */
  downloadChunkBytes?: number;
}

/** One epoch over all nodes. */
export interface EpochTraffic {
  remoteBytes: number;
  remoteRequests: number;
  /** Bytes nodes read from each other (placement only; 0 otherwise). */
  peerBytes: number;
  /** Bytes of sample reads served by a node's own cache. */
  localBytes: number;
}

export interface StrategyTraffic {
  strategy: NodeStrategy;
  /** One per modelled epoch, same order as `orders`. */
  epochs: EpochTraffic[];
}

const DEFAULT_CHUNK = 8 * 1024 * 1024;
export const MAX_MODEL_NODES = 1024;

/** Remote traffic per epoch of every strategy, for `input.nodes` nodes. */
export function projectNodes(input: NodeModelInput): StrategyTraffic[] {
  const m = prepare(input);
  return NODE_STRATEGIES.map((strategy) => ({ strategy, epochs: strategy === 'none' ? noCache(m) : strategy === 'placement' ? placement(m) : perNode(m, strategy === 'per-node-min') }));
}

interface Model {
  nodes: number;
  cap: number;
  chunk: number;
  shardBytes: readonly number[];
  shardOf: Int32Array;
  spanOf: Float64Array;
  /** reads[e][n]: the sample positions node n reads in epoch e, in its order. */
  reads: Int32Array[][];
}

function prepare(input: NodeModelInput): Model {
  const { shardBytes, shardSamples, nodes } = input;
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > MAX_MODEL_NODES) throw new RangeError(`Expected integer between 1 and ${MAX_MODEL_NODES} for nodes but received ${nodes}`);
  if (shardBytes.length !== shardSamples.length) throw new RangeError('shardBytes and shardSamples differ in length');
  const total = shardSamples.reduce((a, b) => a + b, 0);
  const shardOf = new Int32Array(total);
  const spanOf = new Float64Array(total);
  let p = 0;
  shardSamples.forEach((n, s) => {
    for (let i = 0; i < n; i++, p++) {
      shardOf[p] = s;
      spanOf[p] = input.sampleBytes?.[p] ?? (shardBytes[s] as number) / n;
    }
  });
  const perNode = Math.ceil(total / nodes);
  const reads = input.orders.map((order) => {
    if (order.length !== total) throw new RangeError(`an order has ${order.length} samples, the shards ${total}`);
    return Array.from({ length: nodes }, (_, r) => {
      const out = new Int32Array(total === 0 ? 0 : perNode);
      for (let i = 0; i < out.length; i++) {
        const q = r + i * nodes;
        out[i] = order[q < total ? q : (q - total) % total] as number;
      }
      return out;
    });
  });
  return { nodes, cap: input.cacheBytesPerNode, chunk: input.downloadChunkBytes ?? DEFAULT_CHUNK, shardBytes, shardOf, spanOf, reads };
}

const zero = (): EpochTraffic => ({ remoteBytes: 0, remoteRequests: 0, peerBytes: 0, localBytes: 0 });

/** Range reads of `positions` (one node, in order): bytes, and one request per run of storage-adjacent samples. */
function rangeReads(m: Model, positions: ArrayLike<number>, t: EpochTraffic, wanted: (p: number) => boolean = () => true): void {
  let prev = -2;
  for (let i = 0; i < positions.length; i++) {
    const p = positions[i] as number;
    if (!wanted(p)) {
      prev = -2;
      continue;
    }
    t.remoteBytes += m.spanOf[p] as number;
    if (!(p === prev + 1 && m.shardOf[p] === m.shardOf[prev])) t.remoteRequests++;
    prev = p;
  }
}

function noCache(m: Model): EpochTraffic[] {
  return m.reads.map((byNode) => {
    const t = zero();
    for (const positions of byNode) rangeReads(m, positions, t);
    return t;
  });
}

function perNode(m: Model, min: boolean): EpochTraffic[] {
  const out = m.reads.map(zero);
  for (let n = 0; n < m.nodes; n++) {
    // the node's reads over all modelled epochs, with when each shard is read next (MIN's knowledge of the plan)
    const lengths = m.reads.map((byNode) => byNode[n]?.length ?? 0);
    const seq = new Int32Array(lengths.reduce((a, b) => a + b, 0));
    const epochOf = new Int32Array(seq.length);
    let k = 0;
    m.reads.forEach((byNode, e) => {
      for (const p of byNode[n] ?? []) {
        seq[k] = p;
        epochOf[k++] = e;
      }
    });
    const next = new Float64Array(seq.length);
    const seen = new Map<number, number>();
    for (let i = seq.length - 1; i >= 0; i--) {
      const s = m.shardOf[seq[i] as number] as number;
      next[i] = seen.get(s) ?? Infinity;
      seen.set(s, i);
    }
    const cache = min ? new MinCache(m.shardBytes) : new LruCache(m.shardBytes);
    for (let i = 0; i < seq.length; i++) {
      const p = seq[i] as number;
      const t = out[epochOf[i] as number] as EpochTraffic;
      const s = m.shardOf[p] as number;
      const bytes = m.shardBytes[s] as number;
      const key = min ? (next[i] as number) : i;
      if (cache.touch(s, key)) {
        t.localBytes += m.spanOf[p] as number;
      } else if (bytes <= m.cap && cache.makeRoom(bytes, m.cap, key)) {
        cache.add(s, key);
        t.remoteBytes += bytes;
        t.remoteRequests += Math.max(1, Math.ceil(bytes / m.chunk));
        t.localBytes += m.spanOf[p] as number;
      } else {
        t.remoteBytes += m.spanOf[p] as number;
        t.remoteRequests++;
      }
    }
  }
  return out;
}

/** Whole shards in a node's cache, least recently used first (a Map keeps insertion order). */
class LruCache {
  private readonly order = new Map<number, number>();
  used = 0;
  constructor(private readonly bytes: readonly number[]) {}
  touch(s: number, _key: number): boolean {
    if (!this.order.has(s)) return false;
    this.order.delete(s);
    this.order.set(s, 0);
    return true;
  }
  makeRoom(need: number, cap: number, _key: number): boolean {
    for (const s of this.order.keys()) {
      if (cap - this.used >= need) break;
      this.order.delete(s);
      this.used -= this.bytes[s] as number;
    }
    return cap - this.used >= need;
  }
  add(s: number, _key: number): void {
    this.order.set(s, 0);
    this.used += this.bytes[s] as number;
  }
}

/**
 * Whole shards in a node's cache by next use (Belady's MIN): a max-heap of (next use, shard) with stale entries
 * skipped. Room is made only from shards read later than the one that needs it; else nothing is evicted.
 */
class MinCache {
  private readonly nextOf = new Map<number, number>();
  private heap: [number, number][] = [];
  used = 0;
  constructor(private readonly bytes: readonly number[]) {}
  touch(s: number, key: number): boolean {
    if (!this.nextOf.has(s)) return false;
    this.nextOf.set(s, key);
    this.push([key, s]);
    return true;
  }
  makeRoom(need: number, cap: number, key: number): boolean {
    const taken: [number, number][] = [];
    let free = cap - this.used;
    while (free < need) {
      const top = this.popLive();
      if (top === undefined) break;
      if (top[0] <= key) {
        this.push(top); // needed no later than the shard asking: MIN keeps it
        break;
      }
      taken.push(top);
      free += this.bytes[top[1]] as number;
    }
    if (free < need) {
      for (const t of taken) this.push(t);
      return false;
    }
    for (const [, s] of taken) {
      this.nextOf.delete(s);
      this.used -= this.bytes[s] as number;
    }
    return true;
  }
  add(s: number, key: number): void {
    this.nextOf.set(s, key);
    this.push([key, s]);
    this.used += this.bytes[s] as number;
  }
  /** The live entry with the furthest next use (ties: the higher shard), removed from the heap. */
  private popLive(): [number, number] | undefined {
    while (this.heap.length > 0) {
      const top = this.pop();
      if (this.nextOf.get(top[1]) === top[0]) return top;
    }
    return undefined;
  }
  private static above(a: [number, number], b: [number, number]): boolean {
    return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
  }
  private push(e: [number, number]): void {
    const h = this.heap;
    h.push(e);
    for (let i = h.length - 1; i > 0; ) {
      const up = (i - 1) >> 1;
      if (!MinCache.above(h[i] as [number, number], h[up] as [number, number])) break;
      [h[i], h[up]] = [h[up] as [number, number], h[i] as [number, number]];
      i = up;
    }
  }
  private pop(): [number, number] {
    const h = this.heap;
    const top = h[0] as [number, number];
    const last = h.pop() as [number, number];
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let big = i;
        if (l < h.length && MinCache.above(h[l] as [number, number], h[big] as [number, number])) big = l;
        if (r < h.length && MinCache.above(h[r] as [number, number], h[big] as [number, number])) big = r;
        if (big === i) break;
        [h[i], h[big]] = [h[big] as [number, number], h[i] as [number, number]];
        i = big;
      }
    }
    return top;
  }
}

function placement(m: Model): EpochTraffic[] {
  const shards = m.shardBytes.length;
  let holderBefore: Int32Array = new Int32Array(shards).fill(-1);
  return m.reads.map((byNode) => {
    const t = zero();
    const holder = assign(m, byNode);
    for (let s = 0; s < shards; s++) {
      const h = holder[s] as number;
      if (h < 0 || holderBefore[s] === h) continue;
      if (holderBefore[s] as number >= 0) t.peerBytes += m.shardBytes[s] as number;
      else {
        t.remoteBytes += m.shardBytes[s] as number;
        t.remoteRequests += Math.max(1, Math.ceil((m.shardBytes[s] as number) / m.chunk));
      }
    }
    byNode.forEach((positions, n) => {
      for (const p of positions) {
        const h = holder[m.shardOf[p] as number] as number;
        if (h === n) t.localBytes += m.spanOf[p] as number;
        else if (h >= 0) t.peerBytes += m.spanOf[p] as number;
      }
      rangeReads(m, positions, t, (p) => (holder[m.shardOf[p] as number] as number) < 0);
    });
    holderBefore = holder;
    return t;
  });
}

/** Which node holds each shard this epoch (-1: none), computed alike on every node from the seed's orders. */
function assign(m: Model, byNode: readonly Int32Array[]): Int32Array {
  const shards = m.shardBytes.length;
  const counts = new Map<number, number>(); // s * nodes + n -> samples node n reads of shard s
  byNode.forEach((positions, n) => {
    for (const p of positions) {
      const k = (m.shardOf[p] as number) * m.nodes + n;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
  });
  const readers: { n: number; c: number }[][] = Array.from({ length: shards }, () => []);
  for (const [k, c] of counts) readers[Math.floor(k / m.nodes)]?.push({ n: k % m.nodes, c });
  for (const r of readers) r.sort((a, b) => b.c - a.c || a.n - b.n);
  const room = new Float64Array(m.nodes).fill(m.cap);
  const holder = new Int32Array(shards).fill(-1);
  // the shards read most by one node are placed first: they save the most peer traffic
  const byPull = [...readers.keys()].filter((s) => (readers[s]?.length ?? 0) > 0).sort((a, b) => (readers[b]?.[0]?.c ?? 0) - (readers[a]?.[0]?.c ?? 0) || a - b);
  for (const s of byPull) {
    const bytes = m.shardBytes[s] as number;
    let h = readers[s]?.find((r) => (room[r.n] as number) >= bytes)?.n ?? -1;
    if (h < 0) {
      let best = 0;
      for (let n = 1; n < m.nodes; n++) if ((room[n] as number) > (room[best] as number)) best = n;
      if ((room[best] as number) >= bytes) h = best;
    }
    if (h < 0) continue;
    holder[s] = h;
    room[h] = (room[h] as number) - bytes;
  }
  return holder;
}
