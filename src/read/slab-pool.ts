/**
 * Reusable read buffers for the loader's view mode. A slab is lent to one batch and comes back when the caller
 * moves past that batch, so a long epoch reads into the same few buffers instead of allocating (and making the
 * garbage collector track) a fresh buffer per read. Only view mode uses it: the default copy path never hands
 * out pooled memory.
 */

/** Slabs are sized in powers of two from 64 KiB, so a batch reuses a slab made for a slightly larger one. */
const MIN_SLAB_BYTES = 64 * 1024;

export class SlabPool {
  private readonly free = new Map<number, Uint8Array[]>();
  private freeBytes = 0;

  /** @param maxFreeBytes returned slabs beyond this total are dropped to the garbage collector. */
  constructor(private maxFreeBytes: number) {}

  /** Keeps at least `bytes` of returned slabs from now on (a pool shared by loaders with different bounds). */
  keepAtLeast(bytes: number): void {
    if (bytes > this.maxFreeBytes) this.maxFreeBytes = bytes;
  }

  /** A buffer of at least `bytes` bytes (its contents are whatever the last borrower left). */
  take(bytes: number): Uint8Array {
    const size = slabSize(bytes);
    const slab = this.free.get(size)?.pop();
    if (slab !== undefined) {
      this.freeBytes -= size;
      return slab;
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /** Returns a slab from take(); the caller must hold no view of it any more. */
  give(slab: Uint8Array): void {
    if (this.freeBytes + slab.byteLength > this.maxFreeBytes) return;
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
