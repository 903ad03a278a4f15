/**
 * Mixtures: one loader over several datasets, each giving a share of every epoch. MosaicML Streaming, LitData and
 * Megatron-Energon mix by weight the same way; here the counts are exact, the order is a pure function of (seed,
 * epoch), and resume is exact (see mixture-loader.ts).
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { openDataset, type Dataset, type OpenDatasetOptions } from './dataset.js';
import { mixtureCounts } from './mixture-counts.js';
import { MixtureLoader, type DecodedMixtureSample, type MixtureLoaderOptions, type MixtureSample } from './mixture-loader.js';
import type { MixtureSourceIdentity } from './mixture-state.js';

/** A source: a dataset (a location to open, or a Dataset already open) with a weight or a per-epoch sample count. */
export type MixtureSource = { dataset: string | Dataset; weight: number; open?: OpenDatasetOptions } | { dataset: string | Dataset; samples: number; open?: OpenDatasetOptions };

export interface MixtureOptions {
  /**
   * Samples per epoch shared among the weighted sources, in proportion to their weights. Default: the sum of their
   * sizes (weights then only re-balance; weight 1 everywhere reads every sample once). Sources with `samples` come
   * on top.
   */
  epochSamples?: number;
}

export class Mixture {
  /** Samples each source gives per epoch, in source order. */
  readonly counts: readonly number[];
  /** Samples per epoch (before the deal to ranks). */
  readonly epochSamples: number;
  private readonly identities: MixtureSourceIdentity[];

  /** @internal Use openMixture(). */
  constructor(
    readonly datasets: readonly Dataset[],
    counts: number[],
    private readonly owned: readonly Dataset[],
  ) {
    this.counts = counts;
    this.epochSamples = counts.reduce((n, c) => n + c, 0);
    this.identities = datasets.map((ds, i) => ({ index: ds.manifest.index.crc32c, samples: ds.size, count: counts[i] as number }));
  }

  /**
   * A loader over one epoch of the mixture; its samples carry `source` (the index of their source).
   * @example
   * const mix = await openMixture([{ dataset: 'new.shards', weight: 3 }, { dataset: 'old.shards', weight: 1 }]);
   * for await (const batch of mix.loader({ batchSize: 64, seed: 7, epoch })) train(batch);
   */
  loader(options?: MixtureLoaderOptions & { decode?: 'none' }): MixtureLoader<MixtureSample>;
  loader(options: MixtureLoaderOptions): MixtureLoader<DecodedMixtureSample>;
  loader(options: MixtureLoaderOptions = {}): MixtureLoader<MixtureSample> | MixtureLoader<DecodedMixtureSample> {
    return new MixtureLoader(this.datasets.map((ds) => ({ ds })), this.identities, options);
  }

  /** Closes the datasets openMixture opened (not those it was given open). */
  async close(): Promise<void> {
    await Promise.all(this.owned.map((ds) => ds.close()));
  }
}

/**
 * Opens a mixture of datasets (local, http(s), or already open with a cache).
 * @throws ShardkitError INVALID_ARG for no sources, a weight that is not above 0, both or neither of weight and
 *   samples; a source's own error (NOT_A_DATASET, HTTP, ...) when it fails to open, with the source named. The
 *   datasets opened before it are closed.
 * @example const mix = await openMixture([{ dataset: 'a.shards', weight: 0.7 }, { dataset: 'b.shards', samples: 5000 }]);
 */
export async function openMixture(sources: readonly MixtureSource[], options: MixtureOptions = {}): Promise<Mixture> {
  if (!Array.isArray(sources) || sources.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'Expected a non-empty array of { dataset, weight } or { dataset, samples } for the mixture sources');
  sources.forEach((s, i) => {
    if (typeof s !== 'object' || s === null || (typeof s.dataset !== 'string' && typeof (s.dataset as Dataset)?.loader !== 'function')) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected { dataset, weight } or { dataset, samples } for sources[${i}], with dataset a location or an open Dataset`);
    }
  });
  // weights are checked before anything is opened
  const shares = sources.map((s) => ({ size: 0, ...('weight' in s ? { weight: s.weight } : {}), ...('samples' in s ? { samples: s.samples } : {}) }));
  mixtureCounts(shares.map((s) => ({ ...s, size: 1 })), options.epochSamples);
  const datasets: Dataset[] = [];
  const owned: Dataset[] = [];
  try {
    for (const [i, s] of sources.entries()) {
      if (typeof s.dataset !== 'string') {
        datasets.push(s.dataset);
        continue;
      }
      try {
        const ds = await openDataset(s.dataset, s.open ?? {});
        owned.push(ds);
        datasets.push(ds);
      } catch (err) {
        if (err instanceof ShardkitError) throw new ShardkitError(err.code, `mixture source ${i}: ${err.message}`, { ...(err.file === undefined ? {} : { file: err.file }), cause: err });
        throw err;
      }
    }
    const counts = mixtureCounts(
      shares.map((s, i) => ({ ...s, size: (datasets[i] as Dataset).size })),
      options.epochSamples,
    );
    return new Mixture(datasets, counts, owned);
  } catch (err) {
    await Promise.all(owned.map((ds) => ds.close()));
    throw err;
  }
}
