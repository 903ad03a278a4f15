/**
 * Reads one batch. From memory-mapped shards (the native addon: local datasets, or ready copies in the shard cache,
 * `cached`), a batch whose spans are all at most `syncReadMaxBytes` is read with no read plan (readMappedBatch): a
 * joined read of neighbours saves no system call there, and its bytes would be copied, then checksummed in a second
 * pass. Otherwise reads are planned (coalesced over the batch's located records), issued and the samples sliced
 * out: local runs of at most `syncReadMaxBytes` with a synchronous pread right here (on a warm page cache a pread of
 * a few KiB takes ~3 us, a thread-pool round trip ~20 us), larger runs and http requests through `limit` (bounded
 * concurrency), the batch settling when they do. A batch of one sample (copy mode) is read as Dataset.atSync reads it.
 */
import type { Sample } from '../../formats/sample.js';
import type { Dataset } from './dataset.js';
import { planReads, type CoalesceOptions, type ReadRun } from './fetch-plan.js';
import { entryOf, isLone, type RecordRef } from './record-ref.js';
import { carvedBytes, SlabCarver } from './lone-samples.js';
import { decodeRecord, decodeSpan } from './sample-decode.js';
import type { SlabPool } from './slab-pool.js';

export interface BatchReadOptions extends CoalesceOptions {
  verify: boolean;
  /** View mode: read local runs into one slab from this pool. */
  slabs: SlabPool | undefined;
  /** Local reads up to this size are synchronous preads (see LoaderOptions.syncReadMaxBytes). */
  syncReadMaxBytes: number;
  /** Runs an async read under the loader's concurrency bound. */
  limit: <T>(fn: () => Promise<T>) => Promise<T>;
  /**
   * Every shard of the batch has a ready, verified copy in the dataset's shard cache (ShardCache.readyNow, checked in
   * the same synchronous call, cached-batch.ts): the copies are read as local shards are.
   */
  cached?: boolean;
}

export interface BatchRead {
  /** Bytes the reads fetch (holes between coalesced spans included). */
  bytes: number;
  /** Positional reads issued (runs of length 0 need none). */
  reads: number;
  /** The slab lent to this batch (view mode only), to give back once the caller is done with the batch. */
  slab: Uint8Array | undefined;
  /** Samples in the order of the records: an array when every read was synchronous, else a promise. */
  samples: Sample[] | Promise<Sample[]>;
}

const EMPTY = new Uint8Array(0);
/** Marks a run whose only sample was read and decoded whole by Dataset.readRecordSync or readLoneSamplesSync. */
const DECODED = new Uint8Array(0);

/** Reads the samples of `refs` (records that passed Dataset.checkRecord). */
export function readBatch(ds: Dataset, refs: readonly RecordRef[], options: BatchReadOptions): BatchRead {
  const local = !ds.remote || options.cached === true;
  if (refs.length === 1 && local && options.slabs === undefined) {
    const ref = refs[0] as RecordRef;
    if (ref.length <= options.syncReadMaxBytes) return readOne(ds, ref, options.verify);
  }
  if (local && (options.cached === true ? ds.cacheNative : ds.native)) {
    const mapped = readMappedBatch(ds, refs, options);
    if (mapped !== undefined) return mapped;
  }
  return readPlanned(ds, refs, options);
}

/** Plans coalesced reads over `refs`, issues them and slices the samples out (see the file's comment). */
function readPlanned(ds: Dataset, refs: readonly RecordRef[], options: BatchReadOptions): BatchRead {
  const local = !ds.remote || options.cached === true;
  const mapped = options.cached === true ? ds.cacheNative : ds.native;
  const runs = planReads(refs, options);
  let bytes = 0;
  let reads = 0;
  for (const run of runs) {
    bytes += run.length;
    if (run.length > 0) reads++;
  }
  // View mode reads a batch's local runs into one pooled slab. The default path gives each read a fresh buffer
  // of its own: one fresh buffer per batch (hundreds of KiB) was measured 2x slower per sample (bench/read.mjs,
  // 1-100 KiB samples), the allocator handing out new pages each time, while run-sized buffers reuse freed memory.
  const target = local && bytes > 0 && options.slabs !== undefined ? options.slabs.take(bytes) : undefined;
  const slab = target;
  const runBytes: Uint8Array[] = new Array<Uint8Array>(runs.length);
  const samples = new Array<Sample>(refs.length);
  let pending: Array<Promise<void>> | undefined;
  let slabOffset = 0;
  // Runs of one sample with one uncompressed member, when verifying from memory maps: collected per shard and
  // copied and checksummed in one native call (Dataset.readLoneSamplesSync). Runs come ordered by shard.
  const lone = local && mapped && options.verify && target === undefined ? { shard: -1, requests: [] as number[] } : undefined;
  const flushLone = (): void => {
    if (lone === undefined || lone.requests.length === 0) return;
    ds.readLoneSamplesSync(lone.shard, refs, lone.requests, samples);
    lone.requests = [];
  };
  try {
    runs.forEach((run, r) => {
      const at = target === undefined ? 0 : slabOffset;
      slabOffset += run.length;
      if (run.length === 0) runBytes[r] = EMPTY;
      else if (local && run.length <= options.syncReadMaxBytes) {
        if (target === undefined && run.slices.length === 1) {
          // A run of one sample (most runs of a shuffled epoch): one uncompressed member joins its shard's lone
          // samples (copied and verified together, flushLone); any other is read as the sync path reads it.
          const request = (run.slices[0] as ReadRun['slices'][number]).request;
          const ref = refs[request] as RecordRef;
          runBytes[r] = DECODED;
          if (lone !== undefined && isLone(ref.leaf, ref.slot)) {
            if (run.shard !== lone.shard) {
              flushLone();
              lone.shard = run.shard;
            }
            lone.requests.push(request);
          } else {
            samples[request] = ds.readCheckedRecordSync(ref.leaf, ref.slot, undefined, options.verify);
          }
        } else if (lone !== undefined && allLone(refs, run)) {
          // From a memory map, a coalesced read saves no system call, and its bytes would be copied and then
          // checksummed in a second pass: each sample joins the lone ones instead (one pass copies and checksums),
          // and no run-sized buffer is allocated. Each is then a read of its own span, holes left out.
          runBytes[r] = DECODED;
          if (run.shard !== lone.shard) {
            flushLone();
            lone.shard = run.shard;
          }
          for (const s of run.slices) lone.requests.push(s.request);
          reads += run.slices.length - 1;
          bytes -= run.length - spanBytes(run);
        } else {
          runBytes[r] = ds.readShardRangeSync(run.shard, run.offset, run.length, target, at);
        }
      } else {
        (pending ??= []).push(
          options.limit(() => ds.readShardRange(run.shard, run.offset, run.length, target, at)).then((b) => {
            runBytes[r] = b;
          }),
        );
      }
    });
    flushLone();
  } catch (err) {
    // A failed synchronous read: let the async reads already started finish quietly, then report this error.
    // Their slab is dropped, not returned: they may still be writing into it.
    if (pending !== undefined) for (const p of pending) p.catch(() => undefined);
    else if (slab !== undefined) options.slabs?.give(slab);
    throw err;
  }
  const build = (): Sample[] => slice(ds, refs, runs, runBytes, samples, options);
  return {
    bytes,
    reads,
    slab,
    samples: pending === undefined ? build() : Promise.all(pending).then(build),
  };
}

/**
 * A batch of one local sample, read as Dataset.atSync reads it: no read planning, no run, no lone list (a loader
 * with batchSize 1 pays this per sample).
 */
function readOne(ds: Dataset, ref: RecordRef, verify: boolean): BatchRead {
  const samples = [ds.readCheckedRecordSync(ref.leaf, ref.slot, undefined, verify)];
  return { bytes: ref.length, reads: ref.length > 0 ? 1 : 0, slab: undefined, samples };
}

/**
 * A local batch from memory-mapped shards, every span at most `syncReadMaxBytes`; else undefined (the caller plans
 * reads, larger ones asynchronous). Samples of one uncompressed member (most) need no read plan (its sort, run and
 * slice objects): each is copied on its own and checksummed in the same pass, with the others of its shard in one
 * native call per arena slab (lone-samples.ts), into arena views (copy mode) or views carved from one pooled slab
 * (view mode). The other samples (several members, or compressed) are planned reads in copy mode (neighbours share
 * a read) and read alone into the slab in view mode; a batch of none but them is planned whole.
 *
 * One function for every such batch, all-lone or mixed, one shard or several: V8 optimizes it during the first
 * epoch. A second function for mixed batches (a third of the batches of 64 on tree A) was optimized only in the
 * third or fourth epoch, a compile of ~90 M instructions in the middle of a timed epoch (callgrind).
 */
function readMappedBatch(ds: Dataset, refs: readonly RecordRef[], options: BatchReadOptions): BatchRead | undefined {
  const count = refs.length;
  const maxBytes = options.syncReadMaxBytes;
  const slabs = options.slabs;
  let bytes = 0;
  let carved = 0;
  let reads = 0;
  let shard = -1;
  let oneShard = true;
  const lone: number[] = [];
  for (let i = 0; i < count; i++) {
    const ref = refs[i] as RecordRef;
    const length = ref.length;
    if (length > maxBytes) return undefined;
    carved += carvedBytes(length);
    if (length === 0 || !isLone(ref.leaf, ref.slot)) continue;
    lone.push(i);
    bytes += length;
    reads++;
    if (ref.shard !== shard) {
      if (shard >= 0) oneShard = false;
      shard = ref.shard;
    }
  }
  if (lone.length === 0) return undefined;
  const slab = slabs?.take(carved);
  const into = slab === undefined ? undefined : new SlabCarver(slab);
  const samples = new Array<Sample>(count);
  let rest: RecordRef[] | undefined;
  let restAt: number[] | undefined;
  try {
    if (oneShard) ds.readLoneSamplesSync(shard, refs, lone, samples, into, options.verify);
    else for (const [s, requests] of groupByShard(refs, lone)) ds.readLoneSamplesSync(s, refs, requests, samples, into, options.verify);
    if (lone.length < count) {
      for (let i = 0; i < count; i++) {
        if (samples[i] !== undefined) continue;
        const ref = refs[i] as RecordRef;
        if (into === undefined) {
          (rest ??= []).push(ref);
          (restAt ??= []).push(i);
          continue;
        }
        samples[i] = ds.readCheckedRecordSync(ref.leaf, ref.slot, into, options.verify);
        bytes += ref.length;
        if (ref.length > 0) reads++;
      }
    }
  } catch (err) {
    if (slab !== undefined) slabs?.give(slab);
    throw err;
  }
  if (rest === undefined || restAt === undefined) return { bytes, reads, slab, samples };
  return withPlanned(ds, rest, restAt, samples, bytes, reads, options);
}

/** The lone requests of a batch over several shards, grouped by shard (in batch order within one). */
function groupByShard(refs: readonly RecordRef[], lone: readonly number[]): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  for (const i of lone) {
    const shard = (refs[i] as RecordRef).shard;
    const group = groups.get(shard);
    if (group === undefined) groups.set(shard, [i]);
    else group.push(i);
  }
  return groups;
}

/** Copy mode: the samples of a mapped batch that are not lone (`rest`, at `restAt`), as planned reads of their own. */
function withPlanned(ds: Dataset, rest: RecordRef[], restAt: number[], samples: Sample[], bytes: number, reads: number, options: BatchReadOptions): BatchRead {
  const planned = readPlanned(ds, rest, options);
  const place = (read: Sample[]): Sample[] => {
    for (let j = 0; j < read.length; j++) samples[restAt[j] as number] = read[j] as Sample;
    return samples;
  };
  const read = planned.samples;
  return { bytes: bytes + planned.bytes, reads: reads + planned.reads, slab: undefined, samples: Array.isArray(read) ? place(read) : read.then(place) };
}

/** Whether every sample of `run` is one uncompressed member (see isLone). */
function allLone(refs: readonly RecordRef[], run: ReadRun): boolean {
  for (const s of run.slices) {
    const ref = refs[s.request] as RecordRef;
    if (!isLone(ref.leaf, ref.slot)) return false;
  }
  return true;
}

/** Bytes of a run's spans, each copied on its own (a padded epoch's repeat of a span too). */
function spanBytes(run: ReadRun): number {
  let n = 0;
  for (const s of run.slices) n += s.length;
  return n;
}

/** Cuts each sample's span out of its run and decodes it (members are views of the run; CRC verified). */
function slice(ds: Dataset, refs: readonly RecordRef[], runs: readonly ReadRun[], runBytes: readonly Uint8Array[], samples: Sample[], options: BatchReadOptions): Sample[] {
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r] as ReadRun;
    // Plain Uint8Array views, not Buffers: Buffer#slice() returns a view, and users copy a member with slice().
    const read = runBytes[r] as Uint8Array;
    if (read === DECODED) continue;
    const bytes = read instanceof Buffer ? new Uint8Array(read.buffer, read.byteOffset, read.byteLength) : read;
    const ctx = ds.decodeContext(run.shard, options.verify);
    for (const s of run.slices) {
      const span = s.start === 0 && s.length === bytes.length ? bytes : bytes.subarray(s.start, s.start + s.length);
      const ref = refs[s.request] as RecordRef;
      samples[s.request] = decodeRecord(ref.leaf, ref.slot, span, options.verify, ctx.crc32c, undefined) ?? decodeSpan(entryOf(ref), span, ctx);
    }
  }
  return samples;
}
