/**
 * Reusable read buffers for the loader's view mode. A slab is lent to one batch and comes back when the caller
 * moves past that batch, so a long epoch reads into the same few buffers instead of allocating (and making the
 * garbage collector track) a fresh buffer per read. Only view mode uses it: the default copy path never hands
 * out pooled memory.
 */

/** Slabs are sized in powers of two from 64 KiB, so a batch reuses a slab made for a slightly larger one. */
const MIN_SLAB_BYTES = 64 * 1024;
/** give() keeps free slabs up to this many times the largest one (see give). */
const KEPT_LARGEST = 3;
/** take() may lend a free slab up to this many times the size asked for. */
const LARGER_SLAB_FACTOR = 4;

export class SlabPool {
  private readonly free = new Map<number, Uint8Array[]>();
  private freeBytes = 0;
  /** The largest slab returned so far. */
  private largest = 0;

  /** @param maxFreeBytes returned slabs beyond this total are dropped to the garbage collector. */
  constructor(private maxFreeBytes: number) {}

  /** Keeps at least `bytes` of returned slabs from now on (a pool shared by loaders with different bounds). */
  keepAtLeast(bytes: number): void {
    if (bytes > this.maxFreeBytes) this.maxFreeBytes = bytes;
  }

  /** A buffer of at least `bytes` bytes (its contents are whatever the last borrower left). */
  take(bytes: number): Uint8Array {
    const size = slabSize(bytes);
    // a free slab up to 4x larger serves too: batches of varied sizes then reuse the slabs they have, where a new
    // one would be faulted in page by page as it is written (and push a larger one out of the pool when returned)
    for (let s = size; s <= size * LARGER_SLAB_FACTOR; s *= 2) {
      const slab = this.free.get(s)?.pop();
      if (slab !== undefined) {
        this.freeBytes -= s;
        return slab;
      }
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /**
   * Returns a slab from take(); the caller must hold no view of it any more. Kept while the free slabs stay within
   * maxFreeBytes, or within KEPT_LARGEST times the largest slab returned: batches larger than that bound (large
   * samples) still reuse their slabs, a few of them (about what such a loader holds while it runs).
   */
  give(slab: Uint8Array): void {
    if (slab.byteLength > this.largest) this.largest = slab.byteLength;
    if (this.freeBytes + slab.byteLength > Math.max(this.maxFreeBytes, KEPT_LARGEST * this.largest)) return;
    let list = this.free.get(slab.byteLength);
    if (list === undefined) {
      list = [];
      this.free.set(slab.byteLength, list);
    }
    list.push(slab);
    this.freeBytes += slab.byteLength;
  }

  /** Drops every free slab. */
  clear(): void {
    this.free.clear();
    this.freeBytes = 0;
  }
}

function slabSize(bytes: number): number {
  let size = MIN_SLAB_BYTES;
  while (size < bytes) size *= 2;
  return size;
}
