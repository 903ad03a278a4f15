/**
 * A mixture loader's resume state: the epoch plan's progress over the mixture's epoch (see epoch-state.ts), with
 * the identity of every source and its per-epoch count, so a state is refused (BAD_STATE) on other datasets or
 * other weights rather than resuming an order over different samples. Plain JSON.
 */
import { badState, type EpochState, type RankState } from './epoch-state.js';
import { mergeRankStates } from './epoch-plan.js';

export const MIXTURE_STATE_FORMAT = 'shardkit-mixture-state';
export const MIXTURE_STATE_VERSION = 1;

/** One source as a state records it: its index checksum, size, and the samples it gives per epoch. */
export interface MixtureSourceIdentity {
  index: string;
  samples: number;
  count: number;
}

/** Of a rehearsal loader: what lays out its batches (each batch's exemplar slots depend on all three). */
export interface RehearsalLayout {
  ratio: number;
  batchSize: number;
  worldSize: number;
}

export interface MixtureState {
  format: typeof MIXTURE_STATE_FORMAT;
  version: typeof MIXTURE_STATE_VERSION;
  sources: MixtureSourceIdentity[];
  rehearsal?: RehearsalLayout;
  progress: RankState | EpochState;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks that `value` is a mixture state for these sources and returns its progress for planEpoch. */
export function expectMixtureState(value: unknown, sources: readonly MixtureSourceIdentity[], name = 'resumeFrom', rehearsal?: RehearsalLayout): RankState | EpochState {
  if (!isObject(value) || value.format !== MIXTURE_STATE_FORMAT) throw badState(`Expected a mixture loader state from loader.state() for ${name}`);
  if (value.version !== MIXTURE_STATE_VERSION) throw badState(`${name} has mixture state version ${String(value.version)}, this shardkit reads version ${MIXTURE_STATE_VERSION}`);
  if (JSON.stringify(value.sources) !== JSON.stringify(sources)) {
    throw badState(`${name} was saved on other sources or weights (${JSON.stringify(value.sources)}; now ${JSON.stringify(sources)}): resume with the mixture the state was saved on`);
  }
  if (JSON.stringify(value.rehearsal) !== JSON.stringify(rehearsal)) {
    throw badState(`${name} was saved with another rehearsal layout (${JSON.stringify(value.rehearsal)}; now ${JSON.stringify(rehearsal)}): resume with the ratio, batch size and number of ranks it was saved with`);
  }
  if (!isObject(value.progress)) throw badState(`${name}.progress must be an object`);
  return value.progress as unknown as RankState | EpochState;
}

/** Merges the states of all ranks of one mixture job into one that resumes on any number of ranks (see mergeRankStates). */
export function mergeMixtureStates(states: readonly MixtureState[]): MixtureState {
  if (!Array.isArray(states) || states.length === 0) throw badState('mergeMixtureStates needs the states of all ranks but received none');
  const first = states[0] as MixtureState;
  if (!isObject(first) || !Array.isArray(first.sources)) throw badState('states[0] is not a mixture state');
  const progress = states.map((s, i) => expectMixtureState(s, first.sources, `states[${i}]`, first.rehearsal));
  if (progress.some((p) => p.kind !== 'rank')) throw badState('mergeMixtureStates takes per-rank states; one of them is already merged');
  return {
    format: MIXTURE_STATE_FORMAT,
    version: MIXTURE_STATE_VERSION,
    sources: first.sources.map((s) => ({ ...s })),
    ...(first.rehearsal === undefined ? {} : { rehearsal: { ...first.rehearsal } }),
    progress: mergeRankStates(progress as RankState[]),
  };
}
