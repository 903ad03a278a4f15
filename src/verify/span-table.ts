/**
 * The spans of chosen shards, collected by a walk of the index, for the shards whose samples do not come in offset
 * order in key order (shard-stream.ts): sorted by offset, they are fed to a {@link ShardCheck} as the streamed pass
 * feeds the others. 30 bytes per sample of those shards.
 *
 * Memory grows with those shards' samples. Shardkit writes none such (pack, DatasetWriter, append and merge store
 * each shard's samples in key order); `index` over foreign tars whose members are not in key order does. A bounded
 * version, not written yet, would collect per shard only the spans whose offset is in a window [lo, hi) — when more
 * than a budget arrive, keep the lower half by offset and lower hi — check them, and walk the index again from hi:
 * about 2 x samples / budget walks of the index for such a shard.
 */
import type { LeafRecords, LeafSink } from './check-index.js';

export class SpanTable implements LeafSink {
  length = 0;
  shard = new Uint32Array(1024);
  offset = new Float64Array(1024);
  span = new Float64Array(1024);
  crc = new Float64Array(1024);
  page = new Uint32Array(1024);
  slot = new Uint16Array(1024);

  private starts: Uint32Array | undefined;
  private grouped = new Uint32Array(0);

  /** `take[s]` is 1 for each shard s whose spans are collected. */
  constructor(private readonly take: Uint8Array) {}

  leaf(r: LeafRecords, pageNo: number): void {
    for (let i = 0; i < r.count; i++) {
      const shard = r.shard[i] as number;
      if (this.take[shard] !== 1) continue;
      if (this.length === this.shard.length) this.grow();
      const k = this.length++;
      this.shard[k] = shard;
      this.offset[k] = r.offset[i] as number;
      this.span[k] = r.length[i] as number;
      this.crc[k] = r.loneCrc[i] as number;
      this.page[k] = pageNo;
      this.slot[k] = i;
    }
  }

  /** Positions of shard `shard`'s samples, in offset order (ties in key order). */
  positions(shard: number): number[] {
    // grouped by shard once (a counting sort: positions stay in key order within a shard), then each group sorted
    if (this.starts === undefined) {
      const starts = new Uint32Array(this.take.length + 1);
      for (let k = 0; k < this.length; k++) starts[(this.shard[k] as number) + 1]!++;
      for (let s = 0; s < this.take.length; s++) starts[s + 1]! += starts[s] as number;
      const fill = starts.slice(0, this.take.length);
      this.grouped = new Uint32Array(this.length);
      for (let k = 0; k < this.length; k++) this.grouped[fill[this.shard[k] as number]!++] = k;
      this.starts = starts;
    }
    const out = Array.from(this.grouped.subarray(this.starts[shard] as number, this.starts[shard + 1] as number));
    return out.sort((a, b) => (this.offset[a] as number) - (this.offset[b] as number) || a - b);
  }

  private grow(): void {
    const n = 2 * this.shard.length;
    const g = <T extends Uint32Array | Float64Array | Uint16Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.shard = g(this.shard, (k) => new Uint32Array(k));
    this.offset = g(this.offset, (k) => new Float64Array(k));
    this.span = g(this.span, (k) => new Float64Array(k));
    this.crc = g(this.crc, (k) => new Float64Array(k));
    this.page = g(this.page, (k) => new Uint32Array(k));
    this.slot = g(this.slot, (k) => new Uint16Array(k));
  }
}
