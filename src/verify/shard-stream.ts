/**
 * The shard pass of a full verify, run inside the index walk: each leaf's records go, as the walk reads them, to
 * the {@link ShardCheck} of their shard, which reads that shard front to back. Nothing is kept per sample, so
 * memory stays flat whatever the dataset's size: at most {@link MAX_OPEN_SHARDS} checks are open, one chunk each.
 *
 * This takes every shard whose samples come, in key order, in offset order: every shard pack and DatasetWriter
 * write (samples are stored in key order), and also the shards of an append or a merge, whose keys interleave
 * with those of other shards: a few shards are then open at once, each read in order. A shard whose samples do
 * not come in offset order (a sample before the one fed last, or after its check was closed to make room) is
 * dropped from this pass: {@link ShardStream.unordered} lists them for the caller, which checks them after the
 * walk from their spans sorted by offset (verify-dataset.ts). A shard no sample points to is checked there too.
 */
import type { LeafRecords, LeafSink } from './check-index.js';
import type { ShardCheck, ShardResult } from './shard-check.js';

/** Shards checked at once in the walk; each holds a chunk of its shard (8 MiB). */
export const MAX_OPEN_SHARDS = 8;

const UNTOUCHED = 0;
const OPEN = 1;
const FINISHED = 2;
const UNORDERED = 3;

export class ShardStream implements LeafSink {
  /** Results of the shards this pass checked, by shard number. */
  readonly results: (ShardResult | undefined)[];
  private readonly state: Uint8Array;
  /** 1 for a shard whose check was closed once (its cache copy, if any, is made: the pass after it makes none). */
  readonly closed: Uint8Array;
  private readonly checks: (ShardCheck | undefined)[];
  /** Open shards, least recently fed first. */
  private readonly open: number[] = [];
  private current: ShardCheck | undefined;
  private currentShard = -1;

  /**
   * `names`: the shards are tars, whose checks compare each member's tar header with its name (LeafSink.names).
   */
  constructor(
    shardCount: number,
    private readonly start: (shard: number) => ShardCheck,
    readonly names = false,
    private readonly maxOpen = MAX_OPEN_SHARDS,
  ) {
    this.results = new Array<ShardResult | undefined>(shardCount).fill(undefined);
    this.state = new Uint8Array(shardCount);
    this.closed = new Uint8Array(shardCount);
    this.checks = new Array<ShardCheck | undefined>(shardCount).fill(undefined);
  }

  async leaf(r: LeafRecords, pageNo: number): Promise<void> {
    const n = r.count;
    let i = 0;
    while (i < n) {
      if (this.current !== undefined) {
        i = this.current.takeLones(r, i, n, this.currentShard, pageNo);
        if (i === n) break;
      }
      // a sample of another open shard (keys interleave across shards after an append or a merge): that shard's
      // fast path first; what it does not take goes to route (the next turn, the shard is the current one)
      if (r.shard[i] !== this.currentShard && this.switchTo(r.shard[i] as number, r.offset[i] as number)) continue;
      await this.route(r.shard[i] as number, r.offset[i] as number, r.length[i] as number, r.loneCrc[i] as number, pageNo, i);
      i++;
    }
  }

  /** Makes the open check of `shard` the current one, when a sample at `off` comes in its order: true if so. */
  private switchTo(shard: number, off: number): boolean {
    const check = this.checks[shard];
    if (check === undefined || this.state[shard] !== OPEN || off < check.lastOffset) return false;
    this.touch(shard);
    this.current = check;
    this.currentShard = shard;
    return true;
  }

  /** Moves `shard` to the end of the open list (most recently fed). */
  private touch(shard: number): void {
    if (this.open[this.open.length - 1] === shard) return;
    this.open.splice(this.open.indexOf(shard), 1);
    this.open.push(shard);
  }

  /** Closes the checks still open, in shard order; returns the shards left for a pass in offset order. */
  async finish(): Promise<number[]> {
    for (const shard of [...this.open].sort((a, b) => a - b)) await this.close(shard);
    const left: number[] = [];
    this.state.forEach((s, shard) => {
      if (s === UNTOUCHED || s === UNORDERED) left.push(shard);
    });
    return left;
  }

  /** Shards whose samples did not come in offset order (their check starts again from the spans sorted). */
  unordered(): number[] {
    const out: number[] = [];
    this.state.forEach((s, shard) => {
      if (s === UNORDERED) out.push(shard);
    });
    return out;
  }

  /** Closes every open check without a result (the walk stopped on an error). */
  async abandon(): Promise<void> {
    for (const shard of this.open.splice(0)) await this.checks[shard]?.abandon();
  }

  private async route(shard: number, off: number, len: number, crc: number, pageNo: number, slot: number): Promise<void> {
    // a shard number outside the table is reported by the index check
    if (!(shard < this.state.length)) return;
    const state = this.state[shard];
    if (state === UNORDERED) return;
    if (state === FINISHED) return this.drop(shard);
    let check = this.checks[shard];
    if (check === undefined) {
      while (this.open.length >= this.maxOpen) await this.close(this.open[0] as number);
      check = this.start(shard);
      this.checks[shard] = check;
      this.state[shard] = OPEN;
      this.open.push(shard);
    } else if (off < check.lastOffset) {
      await check.abandon();
      return this.drop(shard);
    } else this.touch(shard);
    this.current = check;
    this.currentShard = shard;
    await check.sample(off, len, crc, pageNo, slot);
  }

  private async close(shard: number): Promise<void> {
    const check = this.checks[shard] as ShardCheck;
    this.forget(shard);
    this.results[shard] = await check.finish();
    this.state[shard] = FINISHED;
    this.closed[shard] = 1;
  }

  /** Takes `shard` out of this pass: its result, if any, is dropped; it is checked again from its sorted spans. */
  private drop(shard: number): void {
    this.forget(shard);
    this.results[shard] = undefined;
    this.state[shard] = UNORDERED;
  }

  private forget(shard: number): void {
    this.checks[shard] = undefined;
    const at = this.open.indexOf(shard);
    if (at >= 0) this.open.splice(at, 1);
    if (this.currentShard === shard) {
      this.current = undefined;
      this.currentShard = -1;
    }
  }
}
