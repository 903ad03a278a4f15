/**
 * Rehearsal for continual learning: a loader over the current task's samples with exemplars of earlier tasks in
 * every batch at a ratio (see rehearsal-plan.ts), over ranks, with exact resume. The task is a dataset, or one
 * task of a dataset grown by `append` (its samples found by one scan of the index).
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { openDataset, type Dataset, type OpenDatasetOptions } from './dataset.js';
import { shardRangePositions, taskShards } from './dataset-subset.js';
import { MixtureLoader, type DecodedMixtureSample, type MixtureLoaderOptions, type MixtureSample } from './mixture-loader.js';
import { planRehearsalEpoch, rehearsalShape } from './rehearsal-plan.js';

export interface RehearsalOptions {
  /** The current task: a dataset location or one open; with `task`, only that task of a grown dataset (0: the pack, t: the t-th append). */
  task: { dataset: string | Dataset; task?: number; open?: OpenDatasetOptions };
  /** The exemplar buffer (see updateExemplarBuffer). */
  exemplars: { dataset: string | Dataset; open?: OpenDatasetOptions };
  /** Share of exemplars in each batch, in [0, 1): `round(ratio x batchSize)` of each batch's samples. */
  ratio: number;
}

export class Rehearsal {
  /** @internal Use openRehearsal(). */
  constructor(
    readonly task: Dataset,
    readonly exemplars: Dataset,
    private readonly taskPositions: Uint32Array | undefined,
    readonly ratio: number,
    private readonly owned: readonly Dataset[],
  ) {}

  /** Samples of the current task. */
  get taskSize(): number {
    return this.taskPositions?.length ?? this.task.size;
  }

  /**
   * A loader over one epoch: every batch holds `round(ratio x batchSize)` exemplars (source 1, its last slots) and
   * the rest from the task (source 0). Resume from `state()` (merged over ranks at a step boundary) with the same
   * batchSize and worldSize keeps every batch at the ratio.
   */
  loader(options?: MixtureLoaderOptions & { decode?: 'none' }): MixtureLoader<MixtureSample>;
  loader(options: MixtureLoaderOptions): MixtureLoader<DecodedMixtureSample>;
  loader(options: MixtureLoaderOptions = {}): MixtureLoader<MixtureSample> | MixtureLoader<DecodedMixtureSample> {
    const batchSize = options.batchSize ?? 1;
    const worldSize = options.worldSize ?? 1;
    if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a positive integer for batchSize but received ${JSON.stringify(batchSize)}`);
    if (!Number.isSafeInteger(worldSize) || worldSize < 1) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a positive integer for worldSize but received ${JSON.stringify(worldSize)}`);
    if (options.partition !== undefined || options.dropLast !== undefined) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, 'partition and dropLast do not apply to rehearsal: every batch of every rank is full');
    }
    const shape = rehearsalShape(this.taskSize, this.exemplars.size, this.ratio, batchSize, worldSize);
    const per = shape.steps * worldSize;
    const identities = [
      { index: this.task.manifest.index.crc32c, samples: this.taskSize, count: per * shape.task },
      { index: this.exemplars.manifest.index.crc32c, samples: this.exemplars.size, count: per * shape.exemplars },
    ];
    return new MixtureLoader(
      [{ ds: this.task, ...(this.taskPositions === undefined ? {} : { positions: this.taskPositions }) }, { ds: this.exemplars }],
      identities,
      options,
      (sizes, _counts, seed, epoch) => planRehearsalEpoch(sizes, shape, worldSize, seed, epoch),
      { ratio: this.ratio, batchSize, worldSize },
    );
  }

  /** Closes the datasets openRehearsal opened. */
  async close(): Promise<void> {
    await Promise.all(this.owned.map((ds) => ds.close()));
  }
}

/**
 * Opens a task and an exemplar buffer for rehearsal.
 * @throws ShardkitError INVALID_ARG for a ratio outside [0, 1) or a task the dataset does not have; a dataset's own
 *   error when it fails to open.
 * @example
 * const r = await openRehearsal({ task: { dataset: 'cifar.shards', task: 3 }, exemplars: { dataset: 'buffer-2' }, ratio: 0.25 });
 * for await (const batch of r.loader({ batchSize: 64, seed: 1, epoch })) train(batch); // 16 exemplars in each
 */
export async function openRehearsal(options: RehearsalOptions): Promise<Rehearsal> {
  rehearsalShape(0, 1, options.ratio, 2 ** 30, 1); // the ratio, before anything is opened
  const owned: Dataset[] = [];
  const open = async (d: string | Dataset, o: OpenDatasetOptions | undefined): Promise<Dataset> => {
    if (typeof d !== 'string') return d;
    const ds = await openDataset(d, o ?? {});
    owned.push(ds);
    return ds;
  };
  try {
    const task = await open(options.task.dataset, options.task.open);
    const exemplars = await open(options.exemplars.dataset, options.exemplars.open);
    const positions = options.task.task === undefined ? undefined : await shardRangePositions(task, taskShards(task.manifest, options.task.task));
    return new Rehearsal(task, exemplars, positions, options.ratio, owned);
  } catch (err) {
    await Promise.all(owned.map((ds) => ds.close()));
    throw err;
  }
}
