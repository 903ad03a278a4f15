/**
 * How many samples each source of a mixture gives per epoch. A source is `{ samples: c }` (exactly c per epoch) or
 * `{ weight: w }` (a share of the weighted part of the epoch: `epochSamples`, by default the sum of the weighted
 * sources' sizes, split in proportion to the weights by the largest-remainder method, ties to the earlier source,
 * so the counts are whole numbers that add up exactly).
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

export interface SourceShare {
  /** Samples in the source dataset. */
  size: number;
  weight?: number;
  samples?: number;
}

const MAX_EPOCH = 2 ** 32 - 1;

function invalid(message: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INVALID_ARG, message);
}

/**
 * The per-epoch count of each source.
 * @throws ShardkitError INVALID_ARG for a source with both or neither of weight and samples, a weight that is not a
 *   finite number above 0, a count that is not a whole number, an empty source asked for samples, or an epoch of
 *   more than 2^32 - 1 samples.
 */
export function mixtureCounts(sources: readonly SourceShare[], epochSamples?: number): number[] {
  if (sources.length === 0) throw invalid('a mixture needs at least one source');
  sources.forEach((s, i) => {
    const has = (s.weight !== undefined ? 1 : 0) + (s.samples !== undefined ? 1 : 0);
    if (has !== 1) throw invalid(`source ${i} needs exactly one of weight and samples`);
    if (s.weight !== undefined && !(typeof s.weight === 'number' && Number.isFinite(s.weight) && s.weight > 0)) {
      throw invalid(`Expected a finite number above 0 for sources[${i}].weight but received ${JSON.stringify(s.weight)}; leave a source out rather than weigh it 0`);
    }
    if (s.samples !== undefined && !(Number.isSafeInteger(s.samples) && s.samples >= 0)) {
      throw invalid(`Expected a whole number of at least 0 for sources[${i}].samples but received ${JSON.stringify(s.samples)}`);
    }
  });
  const weighted = sources.flatMap((s, i) => (s.weight === undefined ? [] : [i]));
  if (epochSamples !== undefined && !(Number.isSafeInteger(epochSamples) && epochSamples >= 0)) {
    throw invalid(`Expected a whole number of at least 0 for epochSamples but received ${JSON.stringify(epochSamples)}`);
  }
  if (epochSamples !== undefined && weighted.length === 0) throw invalid('epochSamples applies to weighted sources, and no source has a weight');
  const counts = sources.map((s) => s.samples ?? 0);
  const total = epochSamples ?? weighted.reduce((n, i) => n + (sources[i] as SourceShare).size, 0);
  const weightSum = weighted.reduce((n, i) => n + ((sources[i] as SourceShare).weight as number), 0);
  const exact = weighted.map((i) => (total * ((sources[i] as SourceShare).weight as number)) / weightSum);
  let given = 0;
  weighted.forEach((i, k) => {
    counts[i] = Math.floor(exact[k] as number);
    given += counts[i] as number;
  });
  // the samples the floors left over go to the largest remainders (the earlier source on a tie)
  const byRemainder = weighted.map((_, k) => k).sort((a, b) => (exact[b] as number) - Math.floor(exact[b] as number) - ((exact[a] as number) - Math.floor(exact[a] as number)) || a - b);
  for (let r = 0; r < total - given; r++) {
    const i = weighted[byRemainder[r % byRemainder.length] as number] as number;
    counts[i] = (counts[i] as number) + 1;
  }
  counts.forEach((c, i) => {
    if (c > 0 && (sources[i] as SourceShare).size === 0) throw invalid(`source ${i} is an empty dataset, yet ${c} of its samples are asked for per epoch`);
  });
  const sum = counts.reduce((n, c) => n + c, 0);
  if (sum > MAX_EPOCH) throw invalid(`a mixture epoch of ${sum} samples is more than ${MAX_EPOCH}; ask for fewer`);
  return counts;
}
