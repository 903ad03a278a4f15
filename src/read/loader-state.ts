/**
 * The loader's resume state: the epoch plan's progress (see epoch-state.ts) wrapped with the identity of the
 * dataset it was read from, so a state saved on one dataset is refused on another (SHARDKIT_ERR_BAD_STATE)
 * instead of resuming an order over different samples. Plain JSON, a few hundred bytes at a step boundary.
 */
import type { EpochState, RankState } from './epoch-state.js';
import { badState } from './epoch-state.js';
import { mergeRankStates } from './epoch-plan.js';

export const LOADER_STATE_FORMAT = 'shardkit-loader-state';
/** Bumped when a field changes meaning; states from a newer version are refused. */
export const LOADER_STATE_VERSION = 1;

/** Which dataset a state belongs to: the manifest's index checksum (changes with any re-pack) and its size. */
export interface DatasetIdentity {
  /** `manifest.index.crc32c`: 8 hex digits. */
  index: string;
  samples: number;
}

/**
 * What `loader.state()` returns and `ds.loader({ resumeFrom })` takes. `progress` is one rank's RankState (which
 * resumes that rank, same world size), or, after {@link mergeLoaderStates}, the whole job's EpochState (which
 * resumes on any number of ranks).
 */
export interface LoaderState {
  format: typeof LOADER_STATE_FORMAT;
  version: typeof LOADER_STATE_VERSION;
  dataset: DatasetIdentity;
  progress: RankState | EpochState;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks that `value` is a loader state for the dataset `identity` and returns its progress, for planEpoch's
 * resumeFrom (which checks seed, epoch, shuffle and shard layout). BAD_STATE otherwise.
 */
export function expectLoaderState(value: unknown, identity: DatasetIdentity, name = 'resumeFrom'): RankState | EpochState {
  if (!isObject(value) || value['format'] !== LOADER_STATE_FORMAT) {
    throw badState(`Expected a loader state from loader.state() for ${name} but received ${describe(value)}`);
  }
  if (value['version'] !== LOADER_STATE_VERSION) {
    throw badState(`${name} has loader state version ${String(value['version'])}, this shardkit reads version ${LOADER_STATE_VERSION}`);
  }
  const dataset = value['dataset'];
  if (!isObject(dataset) || dataset['index'] !== identity.index || dataset['samples'] !== identity.samples) {
    const saved = isObject(dataset) ? `index ${String(dataset['index'])}, ${String(dataset['samples'])} samples` : 'no dataset';
    throw badState(
      `${name} was saved on another dataset (${saved}; this one has index ${identity.index}, ${identity.samples} samples): ` +
        'resume on the dataset the state was saved on',
    );
  }
  const progress = value['progress'];
  if (!isObject(progress)) throw badState(`${name}.progress must be an object but is ${describe(progress)}`);
  return progress as unknown as RankState | EpochState;
}

/**
 * Merges the states of all ranks of one job (each rank's `loader.state()`, any order) into one state that
 * resumes the epoch on any number of ranks: nothing yielded is repeated, nothing is lost, even when ranks
 * stopped at different counts. BAD_STATE when ranks are missing or duplicated, or states come from different
 * datasets or options.
 */
export function mergeLoaderStates(states: readonly LoaderState[]): LoaderState {
  if (!Array.isArray(states) || states.length === 0) throw badState('mergeLoaderStates needs the states of all ranks but received none');
  const first = states[0] as LoaderState;
  if (!isObject(first) || !isObject(first.dataset)) throw badState(`states[0] is not a loader state: ${describe(first)}`);
  const identity = { index: first.dataset.index, samples: first.dataset.samples };
  const progress = states.map((s, i) => expectLoaderState(s, identity, `states[${i}]`));
  if (progress.some((p) => p.kind !== 'rank')) throw badState('mergeLoaderStates takes per-rank states; one of them is already merged');
  return {
    format: LOADER_STATE_FORMAT,
    version: LOADER_STATE_VERSION,
    dataset: identity,
    progress: mergeRankStates(progress as RankState[]),
  };
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
