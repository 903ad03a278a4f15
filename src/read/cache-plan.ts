/**
 * Clairvoyant caching for a loader: its order is known for this epoch and the next, so it knows when each shard is
 * read next. The shard cache evicts by that (Belady's MIN, eviction.ts), and the loader fetches the next shards
 * into the cache ahead of need, within a budget of bytes in flight and never beyond what the cache can hold.
 */
import type { ShardCache } from '../cache/shard-cache.js';
import type { EpochPlan } from './epoch-plan.js';

/** Samples looked at ahead of the cursor when choosing shards to prefetch (a bound on the work per batch). */
const LOOKAHEAD_SAMPLES = 65_536;
/**
 * A shard is fetched whole only if the plan reads at least this share of its samples while it can stay cached: a
 * whole-shard fetch then costs at most 2x the range reads it replaces, and saves their requests. Without this rule a
 * full shuffle with half the dataset cached fetched 4x (MIN) to 31x (LRU) the dataset per epoch, whole shards
 * fetched for one sample each and evicted before the next (bench/cache.mjs).
 */
const ADMIT_SHARE = 0.5;

export class CachePlan {
  /**
   * The tables below are built the first time they are needed (see build()): an epoch whose every shard has a verified
   * copy in this process from its start needs none (no prefetch, no eviction, no admission), and building them cost
   * ~17 ms of such an epoch's ~100 ms of CPU (40,000 samples, this epoch's plan and the next one's, --cpu-prof).
   */
  private built = false;
  /** Per shard, the sample indices (this epoch, then the next one after `length`) at which the plan reads it. */
  private uses: Int32Array[] = [];
  private shardOfSample = new Int32Array(0);
  private cursor = 0;
  private inFlightBytes = 0;
  /** Every shard the plan reads from this position on fits in the cache at once: all of them are admitted. */
  private fitsFrom = 0;
  /** Per shard, the position its admission was decided from (-1: never), and the decision (1: admit). */
  private admitFrom = new Float64Array(0);
  private admitted = new Uint8Array(0);
  /** Per shard, the mark of the last admission scan that met it. */
  private horizonSeen = new Uint32Array(0);
  private horizonStamp = 0;
  /** Per shard, the mark of the last prefetch scan that met it (typed arrays: a scan runs for each batch). */
  private seen = new Uint32Array(0);
  private stamp = 0;
  /**
   * The last scan found every shard it met ready or on its way (nothing to start): scans wait until the reads reach
   * this position (the middle of what it met), unless a copy was dropped since (`idleDrops`, ShardCache.readyDrops).
   * A new process on a full cache opens its copies as it goes, so `readyShards` stays below the shard count for most
   * of its first epoch; scanning half the cache's samples for each batch cost it 170 ms of 820 (40,000 samples,
   * block shuffle, --cpu-prof). Prefetch still looks at least half its reach ahead.
   */
  private idleUntil = -1;
  private idleDrops = -1;

  /**
   * `shardStarts[s]`: the position of shard s's first sample (positions of a shard are contiguous, as pack writes);
   * `plans`: this epoch's plan, then optionally the next epoch's (a function: made when the tables are built).
   */
  constructor(
    private readonly cache: ShardCache,
    private readonly shardBytes: readonly number[],
    private readonly shardSamples: readonly number[],
    private readonly shardStarts: readonly number[],
    private readonly planList: ReadonlyArray<EpochPlan | (() => EpochPlan)>,
    private readonly maxInFlightBytes: number,
    private readonly maxAheadBytes: number,
  ) {}

  /** Builds the tables (once): which shard each planned sample reads, when each shard is read, where all fit. */
  private build(): void {
    if (this.built) return;
    this.built = true;
    const { cache, shardBytes, shardSamples, shardStarts } = this;
    const plans = this.planList.map((p) => (typeof p === 'function' ? p() : p));
    const total = plans.reduce((n, p) => n + p.length, 0);
    this.shardOfSample = new Int32Array(total);
    const counts = new Int32Array(shardBytes.length);
    // a table from position to shard (filled range by range) costs less than a binary search per sample: 80,000
    // searches over 400 shards took 60 ms of a new process's first cached epoch (--cpu-prof)
    const shardOfPosition = new Int32Array(shardStarts.length === 0 ? 0 : (shardStarts[shardStarts.length - 1] as number) + (shardSamples[shardSamples.length - 1] as number));
    shardStarts.forEach((start, s) => shardOfPosition.fill(s, start, start + (shardSamples[s] as number)));
    let i = 0;
    for (const plan of plans) {
      for (let k = 0; k < plan.length; k++, i++) {
        const s = shardOfPosition[plan.at(k)] as number;
        this.shardOfSample[i] = s;
        counts[s] = (counts[s] as number) + 1;
      }
    }
    this.uses = Array.from(counts, (n) => new Int32Array(n));
    this.seen = new Uint32Array(shardBytes.length);
    this.horizonSeen = new Uint32Array(shardBytes.length);
    this.fitsFrom = fitsFrom(this.shardOfSample, shardBytes, cache.maxBytes);
    this.admitFrom = new Float64Array(shardBytes.length).fill(-1);
    this.admitted = new Uint8Array(shardBytes.length);
    const fill = new Int32Array(shardBytes.length);
    this.shardOfSample.forEach((s, k) => {
      (this.uses[s] as Int32Array)[(fill[s] as number)++] = k;
    });
  }

  /** When the plan next reads `shard` at or after `from` (default: the cursor); Infinity when it does not. */
  readonly nextUse = (shard: number, from = this.cursor): number => {
    this.build();
    const u = this.uses[shard];
    if (u === undefined) return Infinity;
    let lo = 0;
    let hi = u.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((u[mid] as number) < from) lo = mid + 1;
      else hi = mid;
    }
    return lo < u.length ? (u[lo] as number) : Infinity;
  };

  /**
   * Whether reading `shard` into the cache pays: from its next use on, the plan reads at least {@link ADMIT_SHARE}
   * of its samples before the shards it reads from there stop fitting in the cache (the horizon). Else its samples
   * are read with range reads. The horizon starts at the shard's next use, not at the cursor: shards whose reads end
   * before then need no room then. (From the cursor, a block shuffle with a quarter of the dataset cached refused the
   * next window's shards to the reads ahead of the consumer: 0.5 MB of range reads an epoch, fetched whole again
   * later, bench/cache.mjs.)
   */
  readonly admit = (shard: number): boolean => {
    this.build();
    const next = this.nextUse(shard);
    const from = Number.isFinite(next) ? next : this.cursor;
    if (from >= this.fitsFrom) return true;
    if (this.admitFrom[shard] !== from) {
      this.admitFrom[shard] = from;
      this.admitted[shard] = this.readsEnoughFrom(shard, from) ? 1 : 0;
    }
    return this.admitted[shard] === 1;
  };

  /** Whether the plan reads ADMIT_SHARE of `shard`'s samples from `from` on, before its shards stop fitting in the cache. */
  private readsEnoughFrom(shard: number, from: number): boolean {
    const need = ADMIT_SHARE * (this.shardSamples[shard] as number);
    const stamp = (this.horizonStamp = nextStamp(this.horizonSeen, this.horizonStamp));
    let bytes = 0;
    let count = 0;
    const end = Math.min(this.shardOfSample.length, from + LOOKAHEAD_SAMPLES);
    for (let k = from; k < end; k++) {
      const s = this.shardOfSample[k] as number;
      if (this.horizonSeen[s] !== stamp) {
        bytes += this.shardBytes[s] as number;
        if (bytes > this.cache.maxBytes) return false;
        this.horizonSeen[s] = stamp;
      }
      if (s === shard && ++count >= need) return true;
    }
    return true; // everything the plan reads from there on fits
  }

  /**
   * The consumer has taken the first `yielded` samples: uses before them are past. (Not the batches started: their
   * reads may still wait for a concurrency slot, and a shard they need must not look unneeded.)
   */
  consumed(yielded: number): void {
    this.cursor = Math.max(this.cursor, yielded);
  }

  /** The loader starts reading sample `first` of this epoch: prefetch the shards that come from there on. */
  advance(first: number): void {
    // every shard has a copy open in this process: nothing to prefetch (a fully cached epoch pays no scan per batch)
    if (this.cache.readyShards === this.shardBytes.length) return;
    // in flight at the budget: the scan below would stop at the first shard it could fetch
    if (this.inFlightBytes > 0 && this.inFlightBytes >= this.maxInFlightBytes) return;
    const from = Math.max(this.cursor, first);
    if (from < this.idleUntil && this.cache.readyDrops === this.idleDrops) return;
    this.build();
    let ahead = 0;
    let idle = true;
    const stamp = (this.stamp = nextStamp(this.seen, this.stamp));
    const end = Math.min(this.shardOfSample.length, from + LOOKAHEAD_SAMPLES);
    let k = from;
    for (; k < end; k++) {
      const s = this.shardOfSample[k] as number;
      if (this.seen[s] === stamp) continue;
      this.seen[s] = stamp;
      const bytes = this.shardBytes[s] as number;
      ahead += bytes;
      // never fetch ahead more than the cache holds: it would evict shards needed sooner
      if (ahead > this.maxAheadBytes) break;
      // a copy its proof vouches for is opened now (nothing to fetch, nothing in flight): the batches that read it are
      // then read synchronously
      if (this.cache.has(s) || this.cache.findNow(s)) continue;
      if (!this.admit(s)) {
        idle = false; // admitted later, maybe, as the reads come nearer
        continue;
      }
      if (this.inFlightBytes + bytes > this.maxInFlightBytes && this.inFlightBytes > 0) return;
      this.inFlightBytes += bytes;
      void this.cache
        .prefetch(s)
        .catch(() => undefined) // a failed prefetch is retried by the read that needs the shard, which reports it
        .finally(() => {
          this.inFlightBytes -= bytes;
        });
      idle = false;
    }
    if (idle) {
      this.idleUntil = from + Math.ceil((k - from) / 2);
      this.idleDrops = this.cache.readyDrops;
    }
  }
}

/** The mark after `stamp` for a scan's "shard met" flags in `marks`, which need no clearing between scans. */
function nextStamp(marks: Uint32Array, stamp: number): number {
  if (stamp < 0xffffffff) return stamp + 1;
  marks.fill(0);
  return 1;
}

/** The first position from which the distinct shards `order` reads fit in `maxBytes` together (one backward pass). */
function fitsFrom(order: Int32Array, shardBytes: readonly number[], maxBytes: number): number {
  const met = new Uint8Array(shardBytes.length);
  let bytes = 0;
  for (let k = order.length - 1; k >= 0; k--) {
    const s = order[k] as number;
    if (met[s] === 1) continue;
    met[s] = 1;
    bytes += shardBytes[s] as number;
    if (bytes > maxBytes) return k + 1;
  }
  return 0;
}
