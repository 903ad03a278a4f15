/**
 * One epoch of rehearsal: the current task's samples with exemplars of earlier tasks in every batch at a ratio.
 *
 * With batch size B and W ranks, a batch holds `e = round(ratio x B)` exemplars in its last e slots and `B - e` task
 * samples. A step is W batches, one per rank; the epoch has `S = ceil(n / (W (B - e)))` steps, so it reads every
 * task sample once (in a seeded order), then repeats the first ones of that order to fill the last step, and draws
 * `S W e` exemplars: whole passes over the buffer plus a seeded choice without replacement, in a seeded order. The
 * table is laid out for the epoch plan's deal (rank r takes entries r, r + W, ...): entry q is an exemplar when
 * `floor(q / W) mod B >= B - e`. So every batch of every rank is at the ratio, in an order from (seed, epoch).
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { chooseFromSource, type MixtureEpoch } from './mixture-plan.js';
import { fisherYatesInPlace, identityOrder } from './shuffle/fisher-yates.js';
import { rngFor, type Seed } from './shuffle/prng.js';

export interface RehearsalShape {
  /** Exemplars per batch, and task samples per batch. */
  exemplars: number;
  task: number;
  /** Steps (batches per rank) in the epoch. */
  steps: number;
}

/**
 * The batch composition and epoch length for a task of `taskSize` samples.
 * @throws ShardkitError INVALID_ARG for a ratio outside [0, 1), a batch too small to hold both kinds at that ratio,
 *   or exemplars asked for from an empty buffer.
 */
export function rehearsalShape(taskSize: number, exemplarSize: number, ratio: number, batchSize: number, worldSize: number): RehearsalShape {
  if (!(typeof ratio === 'number' && ratio >= 0 && ratio < 1)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a number in [0, 1) for rehearsal.ratio (the share of exemplars in each batch) but received ${JSON.stringify(ratio)}`);
  }
  const exemplars = Math.round(ratio * batchSize);
  const task = batchSize - exemplars;
  if (task < 1) throw new ShardkitError(ErrorCodes.INVALID_ARG, `a batch of ${batchSize} at rehearsal ratio ${ratio} holds no task sample; use a larger batchSize`);
  if (exemplars > 0 && exemplarSize === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `the exemplar dataset is empty, yet rehearsal ratio ${ratio} asks for ${exemplars} per batch; use ratio 0 for the first task`);
  return { exemplars, task, steps: Math.ceil(taskSize / (worldSize * task)) };
}

/** The epoch's table (source 0: task, source 1: exemplars), for counts `[S W (B - e), S W e]`. */
export function planRehearsalEpoch(sizes: readonly number[], shape: RehearsalShape, worldSize: number, seed: Seed, epoch: number): MixtureEpoch {
  const [taskSize, exemplarSize] = sizes as [number, number];
  const batchSize = shape.task + shape.exemplars;
  const total = shape.steps * worldSize * batchSize;
  const taskOrder = identityOrder(taskSize);
  fisherYatesInPlace(taskOrder, 0, taskSize, rngFor(seed, epoch, 'rehearsal-task'));
  const exemplars = chooseFromSource(exemplarSize, shape.steps * worldSize * shape.exemplars, seed, epoch, 1);
  fisherYatesInPlace(exemplars, 0, exemplars.length, rngFor(seed, epoch, 'rehearsal-exemplars'));
  const source = new Uint32Array(total);
  const position = new Uint32Array(total);
  let t = 0;
  let x = 0;
  for (let q = 0; q < total; q++) {
    if (Math.floor(q / worldSize) % batchSize >= shape.task) {
      source[q] = 1;
      position[q] = exemplars[x++] as number;
    } else {
      // past the task's samples: the first ones of its order again, to fill the last step
      position[q] = taskOrder[t++ % taskSize] as number;
    }
  }
  return { source, position };
}
