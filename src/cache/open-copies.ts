/**
 * The cached copies one process holds open (shard-cache.ts), and the bookkeeping that bounds their descriptors.
 *
 * At most maxOpen copies are open, least recently used first. Past that, the least recently used one is closed and
 * parked: this process verified it, and opens it again by its proof (copy-proof.ts) when it is read. One descriptor
 * (and map) per open copy; a cache of thousands of shards would otherwise run out of descriptors (`ulimit -n`, often
 * 1024). A copy dropped (evicted, distrusted) while it was being opened is not made ready.
 */
import type { ShardRecord } from '../../formats/index-layout.js';
import { FileSource, type FileSourceOptions } from '../io/file-source.js';
import { hasProof, touchCopy } from './copy-proof.js';

/**
 * Most copies open at once when openDataset's `maxOpenShards` is not given (when it is, copies obey it as local shards
 * do). Above the local reader's 64: reopening a copy also checks its proof, and a full shuffle over 505 shards with
 * 64 open reopened ~35,000 an epoch, 2.0 s of CPU against 0.12 s with all open (40,000 samples, bench/cache.mjs's
 * timed dataset). 512 stays well under the usual `ulimit -n` of 1024.
 */
export const DEFAULT_CACHE_MAX_OPEN = 512;

/** A verified copy open for reads. */
export interface OpenCopy {
  source: FileSource;
}

/** What {@link OpenCopies.openByProof} did: opened the copy, found none it trusts, or found a parked copy gone. */
export type ProofOpen = 'open' | 'none' | 'lost';

export class OpenCopies {
  /** Open verified copies, least recently used first (Map order), at most maxOpen of them. */
  private readonly ready = new Map<number, OpenCopy>();
  /** Copies this process verified (or found by their proof) and keeps closed to stay within maxOpen. */
  private readonly parked = new Set<number>();
  /**
   * Shards whose copy was dropped (evicted or distrusted) by this process since it began opening it: the copy it
   * opens is then not made ready. Without this, a copy evicted between its rename and its open stayed ready through
   * its unlinked file: reads never went remote again and the disk held more than maxBytes (bench/cache.mjs, full
   * shuffle, 25 % LRU cache: 25 of 26 shards ready, 6 on disk).
   */
  private readonly dropped = new Set<number>();
  /** Shards whose copy is being opened and checked: room is not made by evicting them (they are about to be read). */
  private readonly opening = new Set<number>();

  constructor(
    /** Most copies open at once. */
    readonly maxOpen: number,
    /** How copies are opened (memory-mapped when the native addon is there). */
    private readonly sourceOptions: FileSourceOptions,
  ) {}

  /** The open copy of `shard`, its use order unchanged; undefined when it is not open. */
  get(shard: number): OpenCopy | undefined {
    return this.ready.get(shard);
  }

  isOpen(shard: number): boolean {
    return this.ready.has(shard);
  }

  isParked(shard: number): boolean {
    return this.parked.has(shard);
  }

  isOpening(shard: number): boolean {
    return this.opening.has(shard);
  }

  /** Whether `shard` was dropped since {@link OpenCopies.beginOpening}: the copy being opened is not to be made ready. */
  wasDropped(shard: number): boolean {
    return this.dropped.has(shard);
  }

  /** How many copies are open. */
  get openCount(): number {
    return this.ready.size;
  }

  /** How many copies are open or parked. */
  get count(): number {
    return this.ready.size + this.parked.size;
  }

  /** The open copy of `shard`, now the most recently used; undefined when it is not open. */
  use(shard: number): OpenCopy | undefined {
    const local = this.ready.get(shard);
    if (local !== undefined && this.parked.size > 0) {
      // most recently used last: the copy closed to make room is the least recently used
      this.ready.delete(shard);
      this.ready.set(shard, local);
    }
    return local;
  }

  /** Notes a copy found by its proof without opening it (it is opened when read). */
  park(shard: number): void {
    this.parked.add(shard);
  }

  /**
   * Opens the copy at `file` when its proof shows it is the very file that was checked, and makes it ready. `lost`:
   * the copy was parked (this process trusted it) and is gone or no longer vouched for.
   */
  openByProof(shard: number, file: string, record: ShardRecord): ProofOpen {
    const wasParked = this.parked.delete(shard);
    let source: FileSource | undefined;
    if (hasProof(file, record.crc32c)) {
      try {
        source = FileSource.openSync(file, this.sourceOptions);
        if (source.sizeSync() !== record.bytes) {
          source.closeSync();
          source = undefined;
        }
      } catch {
        source = undefined; // evicted by another process meanwhile
      }
    }
    if (source === undefined) return wasParked ? 'lost' : 'none';
    touchCopy(file); // LRU across processes
    this.set(shard, source);
    return 'open';
  }

  /** Records `source` as the open copy of `shard`; past maxOpen, the least recently used other copy is closed and parked. */
  set(shard: number, source: FileSource): OpenCopy {
    const open = this.ready.get(shard);
    if (open !== undefined && !open.source.isClosed) {
      // opened meanwhile by another path (openByProof while an async open awaited): one descriptor per copy
      if (open.source !== source) void source.close().catch(() => undefined);
      return open;
    }
    const ready = { source };
    this.ready.set(shard, ready);
    this.parked.delete(shard);
    if (this.ready.size > this.maxOpen) {
      for (const [s, r] of this.ready) {
        if (s === shard) continue;
        this.ready.delete(s);
        this.parked.add(s);
        void r.source.close().catch(() => undefined); // async reads in flight on it finish first
        break;
      }
    }
    return ready;
  }

  /** Stops trusting the copy of `shard`: closed (after the reads in flight on it), no longer parked, not made ready if being opened. */
  drop(shard: number): void {
    this.dropped.add(shard);
    this.parked.delete(shard);
    const r = this.ready.get(shard);
    if (r === undefined) return;
    this.ready.delete(shard);
    void r.source.close().catch(() => undefined); // reads in flight finish first (FileSource closes after them)
  }

  /** Marks `shard` as being opened (and not dropped); {@link OpenCopies.endOpening} when done. */
  beginOpening(shard: number): void {
    this.dropped.delete(shard);
    this.opening.add(shard);
  }

  endOpening(shard: number): void {
    this.opening.delete(shard);
  }

  /** Closes every open copy and forgets the parked ones. */
  async closeAll(): Promise<void> {
    for (const r of this.ready.values()) await r.source.close();
    this.ready.clear();
    this.parked.clear();
  }
}
