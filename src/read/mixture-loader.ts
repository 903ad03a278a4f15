/**
 * One loader over several datasets mixed by weight (see mixture.ts). Each epoch's samples and their order come from
 * (seed, epoch) alone (mixture-plan.ts); the ranks share that order as the single-dataset loader's ranks share
 * theirs, through the same epoch plan over the mixture's epoch, so counts per rank, padding, dropLast, state() and
 * resume (on any number of ranks, after mergeMixtureStates) behave exactly as for one dataset. A batch is read per
 * source with the dataset loader's batch reader (coalesced positional reads, CRC32C, LZ4), batches ahead of
 * consumption while under `prefetch` bytes through the dataset loader's read-ahead queue (read-ahead.ts); each sample
 * carries `source`, the index of the source it came from.
 */
import pLimit from 'p-limit';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { readBatch, type BatchReadOptions } from './batch-read.js';
import type { Dataset } from './dataset.js';
import { decodeBatchImages } from './decode-batch.js';
import type { DecodedImage } from './decode-image.js';
import { planEpoch, type EpochPlan, type Partition } from './epoch-plan.js';
import { resolveLoaderOptions, type LoaderOptions, type ResolvedLoaderOptions } from './loader-options.js';
import { planMixtureEpoch, type MixtureEpoch } from './mixture-plan.js';
import { expectMixtureState, MIXTURE_STATE_FORMAT, MIXTURE_STATE_VERSION, type MixtureSourceIdentity, type MixtureState, type RehearsalLayout } from './mixture-state.js';
import { closedError, ReadAhead, type BatchSource, type QueuedBatch } from './read-ahead.js';
import { locateAsync } from './record-locate.js';
import { recordRef, type RecordRef } from './record-ref.js';
import type { Seed } from './shuffle/index.js';

/** The loader options that apply to a mixture (the order is always the mixture's own seeded one). */
export interface MixtureLoaderOptions extends Pick<LoaderOptions, 'batchSize' | 'prefetch' | 'concurrency' | 'decode' | 'decodeConcurrency' | 'verify' | 'coalesceGapBytes' | 'maxReadBytes' | 'syncReadMaxBytes'> {
  seed?: Seed;
  epoch?: number;
  rank?: number;
  worldSize?: number;
  partition?: Partition;
  dropLast?: boolean;
  /** Continue an epoch from `loader.state()` (or mergeMixtureStates(...)) with otherwise the same options. */
  resumeFrom?: MixtureState;
}

/** A sample of a mixture: the dataset's sample and the index of the source it came from. */
export type MixtureSample = Sample & { source: number };
export type DecodedMixtureSample = { key: string; members: Record<string, Uint8Array | DecodedImage>; source: number };

export interface MixtureLoaderStats {
  batches: number;
  samples: number;
  /** Samples yielded from each source. */
  perSource: number[];
  reads: number;
  bytesRead: number;
  prefetchedBytes: number;
  peakPrefetchedBytes: number;
  stalls: number;
}

/** A source as the loader reads it: a dataset, or the part of it at `positions` (ascending key-order positions). */
export interface MixtureInput {
  ds: Dataset;
  positions?: Uint32Array;
}

/** Lays out one epoch: the source and source-relative index of each of its samples (see mixture-plan.ts). */
export type ArrangeEpoch = (sizes: readonly number[], counts: readonly number[], seed: Seed, epoch: number) => MixtureEpoch;

export class MixtureLoader<S = MixtureSample> implements AsyncIterableIterator<S[]>, BatchSource<S> {
  /** Samples this rank yields, and in how many batches. */
  readonly length: number;
  readonly batches: number;
  private readonly plan: EpochPlan;
  private readonly epochTable: MixtureEpoch;
  private readonly opts: ResolvedLoaderOptions;
  private readonly readOptions: BatchReadOptions[];
  private readonly decodeLimit: ReturnType<typeof pLimit>;
  private readonly bytesPerSample: number;
  private readonly counters: MixtureLoaderStats;
  /** The read-ahead queue, as the dataset loader's. */
  private readonly ahead: ReadAhead<S>;
  /** Remote lookups run one batch after another, sorted by position, so each index page is fetched once (as Loader). */
  private locateTail: Promise<unknown> = Promise.resolve();
  private readonly readLimit: ReturnType<typeof pLimit>;

  private readonly sources: readonly Dataset[];
  private readonly subsets: readonly (Uint32Array | undefined)[];

  /** @internal Use `mixture.loader(options)`. */
  constructor(
    inputs: readonly MixtureInput[],
    private readonly identities: readonly MixtureSourceIdentity[],
    options: MixtureLoaderOptions,
    arrange: ArrangeEpoch = planMixtureEpoch,
    private readonly rehearsal?: RehearsalLayout,
  ) {
    const sources = inputs.map((x) => x.ds);
    this.sources = sources;
    this.subsets = inputs.map((x) => x.positions);
    const o = options as MixtureLoaderOptions & { shuffle?: unknown; view?: unknown; windowShards?: unknown };
    for (const name of ['shuffle', 'windowShards', 'view'] as const) {
      if (o[name] !== undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${name} does not apply to a mixture, whose order is its own seeded mix of the sources; leave it out`);
    }
    this.opts = resolveLoaderOptions(options, sources.some((ds) => ds.remote), true);
    const total = identities.reduce((n, s) => n + s.count, 0);
    const seed = options.seed ?? 0;
    const epoch = options.epoch ?? 0;
    // the plan over the mixture's epoch deals it to the ranks and keeps the resume cursor, as for one dataset
    this.plan = planEpoch({
      shardSizes: [total],
      seed,
      epoch,
      shuffle: 'none',
      batchSize: this.opts.batchSize,
      ...(options.rank === undefined ? {} : { rank: options.rank }),
      ...(options.worldSize === undefined ? {} : { worldSize: options.worldSize }),
      ...(options.partition === undefined ? {} : { partition: options.partition }),
      ...(options.dropLast === undefined ? {} : { dropLast: options.dropLast }),
      ...(options.resumeFrom === undefined ? {} : { resumeFrom: expectMixtureState(options.resumeFrom, identities, 'resumeFrom', rehearsal) }),
    });
    this.epochTable = arrange(
      identities.map((s) => s.samples),
      identities.map((s) => s.count),
      seed,
      epoch,
    );
    this.length = this.plan.length;
    this.batches = this.plan.batches;
    const readLimit = pLimit(this.opts.concurrency);
    this.readLimit = readLimit;
    this.decodeLimit = pLimit(this.opts.decodeConcurrency);
    this.readOptions = sources.map((ds) => ({
      gapBytes: this.opts.coalesceGapBytes,
      maxReadBytes: this.opts.maxReadBytes,
      syncReadMaxBytes: this.opts.syncReadMaxBytes,
      verify: options.verify ?? ds.verify,
      slabs: undefined,
      limit: <T>(fn: () => Promise<T>): Promise<T> => readLimit((): Promise<T> => (this.finished ? Promise.reject(closedError()) : fn())),
    }));
    const stored = sources.reduce((n, ds, i) => n + (ds.size === 0 ? 0 : (ds.manifest.totals.storedBytes / ds.size) * (identities[i] as MixtureSourceIdentity).count), 0);
    if (total !== this.epochTable.source.length) throw new Error(`mixture epoch of ${this.epochTable.source.length} samples, expected ${total}`);
    this.bytesPerSample = total === 0 ? 0 : stored / total;
    this.counters = { batches: 0, samples: 0, perSource: sources.map(() => 0), reads: 0, bytesRead: 0, prefetchedBytes: 0, peakPrefetchedBytes: 0, stalls: 0 };
    this.ahead = new ReadAhead<S>(this, { batches: this.batches, batchSize: this.opts.batchSize, length: this.length, prefetch: this.opts.prefetch, bytesPerSample: this.bytesPerSample }, this.counters);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<S[], undefined>> {
    return this.ahead.next();
  }

  return(): Promise<IteratorReturnResult<undefined>> {
    this.ahead.stop();
    return Promise.resolve({ done: true, value: undefined });
  }

  async close(): Promise<void> {
    await this.return();
  }

  /** Where this rank stands, as plain JSON: pass it as `resumeFrom` (same mixture and options) to continue exactly. */
  state(): MixtureState {
    return {
      format: MIXTURE_STATE_FORMAT,
      version: MIXTURE_STATE_VERSION,
      sources: this.identities.map((s) => ({ ...s })),
      ...(this.rehearsal === undefined ? {} : { rehearsal: { ...this.rehearsal } }),
      progress: this.plan.state(this.counters.samples),
    };
  }

  stats(): MixtureLoaderStats {
    return { ...this.counters, perSource: [...this.counters.perSource] };
  }

  /** The source and position (key order, in the source's dataset) of this rank's i-th sample (0 <= i < length). */
  sampleAt(i: number): { source: number; position: number } {
    const v = this.plan.at(i);
    const source = this.epochTable.source[v] as number;
    const index = this.epochTable.position[v] as number;
    const subset = this.subsets[source];
    return { source, position: subset === undefined ? index : (subset[index] as number) };
  }

  /** @internal BatchSource */
  startBatch(batch: QueuedBatch<S>, first: number): S[] | Promise<S[]> {
    return this.read(batch, first, batch.count);
  }

  /** @internal BatchSource */
  mayReadAhead(): boolean {
    return true;
  }

  /** @internal BatchSource: counts the batch's samples per source. */
  delivered(_batch: QueuedBatch<S>, samples: S[]): void {
    for (const s of samples) (this.counters.perSource[(s as { source: number }).source] as number)++;
  }

  /** @internal BatchSource (no view mode: no slabs) */
  giveBack(): void {}

  /** @internal BatchSource */
  stopped(): void {}

  private get finished(): boolean {
    return this.ahead.finished;
  }

  /** Reads the batch's samples, source by source, and puts them back in the mixture's order. */
  private read(pending: QueuedBatch<S>, first: number, count: number): S[] | Promise<S[]> {
    const slots: number[][] = this.sources.map(() => []);
    const positions: number[][] = this.sources.map(() => []);
    for (let k = 0; k < count; k++) {
      const { source, position } = this.sampleAt(first + k);
      (slots[source] as number[]).push(k);
      (positions[source] as number[]).push(position);
    }
    const out = new Array<S>(count);
    const waits: Promise<void>[] = [];
    let bytes = 0;
    this.sources.forEach((ds, s) => {
      const wanted = positions[s] as number[];
      if (wanted.length === 0) return;
      const place = (samples: Sample[]): void => {
        (slots[s] as number[]).forEach((slot, j) => {
          out[slot] = { ...(samples[j] as Sample), source: s } as S;
        });
      };
      if (ds.remote) {
        const located = this.locateTail.then(() => locateAsync(ds, wanted, this.readLimit, () => this.finished));
        this.locateTail = located.catch(() => undefined);
        waits.push(
          located.then(async (refs) => {
            const read = readBatch(ds, refs, this.readOptions[s] as BatchReadOptions);
            this.counted(read.reads, read.bytes);
            place(await read.samples);
          }),
        );
        return;
      }
      const read = readBatch(ds, this.locateSync(ds, wanted), this.readOptions[s] as BatchReadOptions);
      this.counted(read.reads, read.bytes);
      bytes += read.bytes;
      if (Array.isArray(read.samples)) place(read.samples);
      else waits.push(read.samples.then(place));
    });
    if (waits.length === 0 && this.sources.every((ds) => !ds.remote)) this.ahead.setBytes(pending, bytes);
    const isImage = this.opts.isImage;
    if (waits.length === 0 && isImage === undefined) return out;
    return Promise.all(waits).then(() => (isImage === undefined ? out : this.decodeImages(out as MixtureSample[], isImage)));
  }

  private locateSync(ds: Dataset, positions: readonly number[]): RecordRef[] {
    return positions.map((position) => {
      const hit = ds.index.leafOfSync(position);
      ds.checkRecord(hit.leaf, position - hit.base);
      return recordRef(hit.leaf, position - hit.base);
    });
  }

  private decodeImages(samples: MixtureSample[], isImage: (ext: string) => boolean): Promise<S[]> {
    return decodeBatchImages(samples, isImage, this.decodeLimit, () => undefined) as Promise<S[]>;
  }

  private counted(reads: number, bytes: number): void {
    this.counters.reads += reads;
    this.counters.bytesRead += bytes;
  }
}
