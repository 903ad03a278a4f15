/**
 * The exemplar buffer of continual learning: at most `size` samples of the tasks seen so far, kept as a shardkit
 * dataset and updated after each task from the previous buffer and the task's samples (one task of a dataset grown
 * by `append`, so every `cls` indexes the same class list). Two policies:
 * - `random` (naive incremental learning's random replacement): reservoir sampling over every sample offered so
 *   far, in task order and key order within a task, so the buffer is a uniform sample of all tasks' samples. The
 *   buffer's slots are its samples in key order; the count offered so far is kept in `extra.exemplars.seen`.
 * - `class-balanced` (iCaRL's budget rule, without its feature-based herding): every class seen so far gets
 *   `floor(size / K)` places (the first `size mod K` classes by number one more), K the number of classes; a
 *   class's places go to a seeded uniform choice among its old exemplars and its new samples, so a class that
 *   gets no new samples only loses exemplars as K grows. A class with fewer samples than places keeps them all.
 * Seeded by (seed, task): the same inputs give the same buffer, byte for byte.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { carriedFiles } from '../../formats/shard-index.js';
import type { Manifest } from '../../formats/manifest.js';
import { openDataset, type Dataset } from '../read/dataset.js';
import { shardRangePositions, taskShards } from '../read/dataset-subset.js';
import { rngFor, type Seed } from '../read/shuffle/prng.js';
import { DatasetWriter } from './dataset-writer.js';

export type ExemplarPolicy = 'random' | 'class-balanced';

export interface ExemplarBufferOptions {
  /** The grown dataset the tasks are appended to (local or http(s)). */
  dataset: string;
  /** The task whose samples join the buffer: 0 for what the pack made, t for the t-th append. */
  task: number;
  /** The buffer after the previous task (a directory this function wrote); absent before the first task. */
  previous?: string;
  /** The new buffer's directory. */
  out: string;
  /** Most samples the buffer holds. */
  size: number;
  policy: ExemplarPolicy;
  seed?: Seed;
  /** Replace a dataset already at `out`. */
  force?: boolean;
}

/** What a buffer records in its manifest's `extra.exemplars`. */
export interface ExemplarRecord {
  policy: ExemplarPolicy;
  size: number;
  seed: Seed;
  /** Tasks offered so far (the last one: `task`), and samples offered so far. */
  task: number;
  seen: number;
  /** Exemplars per class number (class-balanced), by the cls text. */
  perClass?: Record<string, number>;
}

export interface ExemplarBufferResult {
  manifest: Manifest;
  /** Samples in the buffer, and how many of them came from this task. */
  samples: number;
  fromTask: number;
}

/** A sample the new buffer keeps: from the previous buffer (at its position there) or from the task. */
type Pick = { from: 'previous' | 'task'; position: number };

/**
 * Writes the buffer after task `task` (see the policies above).
 * @throws ShardkitError INVALID_ARG for a size that is not a positive integer, an unknown policy, a previous buffer of
 *   another policy or size, or (class-balanced) a sample without a `cls` member.
 */
export async function updateExemplarBuffer(options: ExemplarBufferOptions): Promise<ExemplarBufferResult> {
  const { size, policy } = options;
  const seed = options.seed ?? 0;
  if (!Number.isSafeInteger(size) || size < 1) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a positive integer for the buffer size but received ${JSON.stringify(size)}`);
  if (policy !== 'random' && policy !== 'class-balanced') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected "random" or "class-balanced" for the buffer policy but received ${JSON.stringify(policy)}`);
  const ds = await openDataset(options.dataset);
  const previous = options.previous === undefined ? undefined : await openDataset(options.previous);
  try {
    const before = previous === undefined ? undefined : previousRecord(previous, options);
    const taskPositions = await shardRangePositions(ds, taskShards(ds.manifest, options.task));
    const seen = (before?.seen ?? 0) + taskPositions.length;
    const picks = policy === 'random' ? await randomReplacement(previous, taskPositions, before?.seen ?? 0, size, seed, options.task) : await classBalanced(ds, previous, taskPositions, size, seed, options.task);
    const record: ExemplarRecord = { policy, size, seed, task: options.task, seen, ...(picks.perClass === undefined ? {} : { perClass: picks.perClass }) };
    const writer = new DatasetWriter({
      dir: options.out,
      layout: ds.manifest.layout,
      compress: ds.manifest.compress,
      pageSize: ds.manifest.index.pageSize,
      passes: ds.manifest.passes,
      command: 'exemplars',
      force: options.force ?? false,
    });
    try {
      for (const p of picks.kept) {
        const source = p.from === 'task' ? ds : (previous as Dataset);
        writer.add(await source.at(p.position));
      }
      // the class list of the grown dataset as of this task: every cls in the buffer indexes it
      for (const name of carriedFiles(ds.manifest.files)) writer.addFile(name, await ds.readExtraFile(name), 'the dataset');
      for (const [k, v] of Object.entries(ds.manifest.extra)) if (k !== 'exemplars' && k !== 'adopted') writer.setExtra(k, v);
      writer.setExtra('exemplars', record);
      const manifest = await writer.finish();
      return { manifest, samples: picks.kept.length, fromTask: picks.kept.filter((p) => p.from === 'task').length };
    } catch (err) {
      writer.abort();
      throw err;
    }
  } finally {
    await ds.close();
    await previous?.close();
  }
}

function previousRecord(previous: Dataset, options: ExemplarBufferOptions): ExemplarRecord {
  const r = previous.manifest.extra.exemplars as Partial<ExemplarRecord> | undefined;
  if (r === undefined || typeof r.seen !== 'number') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${options.previous} is not an exemplar buffer (no extra.exemplars in its manifest); give the buffer written after the previous task`, { file: previous.location });
  }
  if (r.policy !== options.policy || r.size !== options.size) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${options.previous} is a ${String(r.policy)} buffer of ${String(r.size)}, not ${options.policy} of ${options.size}; keep one policy and size over the tasks`, { file: previous.location });
  }
  return r as ExemplarRecord;
}

/** Reservoir sampling (Vitter's algorithm R) continued over the task's samples: slot j of the previous buffer is its j-th sample in key order. */
async function randomReplacement(previous: Dataset | undefined, task: Uint32Array, seenBefore: number, size: number, seed: Seed, taskNo: number): Promise<{ kept: Pick[]; perClass?: undefined }> {
  const slots: Pick[] = Array.from({ length: previous?.size ?? 0 }, (_, position) => ({ from: 'previous' as const, position }));
  const rng = rngFor(seed, taskNo, 'exemplars-random');
  task.forEach((position, j) => {
    const offered = seenBefore + j; // samples offered before this one
    if (slots.length < size) slots.push({ from: 'task', position });
    else {
      const r = rng.nextBelow(offered + 1);
      if (r < size) slots[r] = { from: 'task', position };
    }
  });
  return { kept: slots };
}

/** iCaRL's budget: floor(size / K) places per class (the first size mod K classes one more), a seeded choice within each class. */
async function classBalanced(ds: Dataset, previous: Dataset | undefined, task: Uint32Array, size: number, seed: Seed, taskNo: number): Promise<{ kept: Pick[]; perClass: Record<string, number> }> {
  const byClass = new Map<string, Pick[]>();
  const add = async (source: Dataset, from: Pick['from'], position: number): Promise<void> => {
    const sample = await source.at(position);
    const cls = sample.members.cls;
    if (cls === undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `a class-balanced buffer needs a cls member in every sample, and ${sample.key} has none; tag the dataset (pack --pass tag=dirname)`, { key: sample.key });
    const name = new TextDecoder().decode(cls).trim();
    const list = byClass.get(name) ?? [];
    list.push({ from, position });
    byClass.set(name, list);
  };
  for (let p = 0; p < (previous?.size ?? 0); p++) await add(previous as Dataset, 'previous', p);
  for (const p of task) await add(ds, 'task', p);
  // classes by number (cls is a class index), names that are not numbers after them in byte order
  const classes = [...byClass.keys()].sort((a, b) => Number(a) - Number(b) || (a < b ? -1 : a > b ? 1 : 0));
  const base = Math.floor(size / classes.length);
  const extra = size % classes.length;
  const kept: Pick[] = [];
  const perClass: Record<string, number> = {};
  classes.forEach((name, k) => {
    const candidates = byClass.get(name) as Pick[];
    const places = Math.min(candidates.length, base + (k < extra ? 1 : 0));
    const rng = rngFor(seed, taskNo, `exemplars-class-${name}`);
    for (let i = 0; i < places; i++) {
      const j = i + rng.nextBelow(candidates.length - i);
      const held = candidates[i] as Pick;
      candidates[i] = candidates[j] as Pick;
      candidates[j] = held;
    }
    kept.push(...candidates.slice(0, places));
    perClass[name] = places;
  });
  return { kept, perClass };
}
