/**
 * Preprocessing passes: functions over samples that `pack` (and `derive`) run once, in the order given, so that
 * training reads the prepared variant instead of every researcher writing back millions of small files.
 */
import type { Sample } from '../../formats/sample.js';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';

export interface PassContext {
  /** Source relative path of each member, by ext, when packing from files (before any pass renamed members). */
  paths?: Record<string, string>;
}

/** What a pass leaves for the dataset root and the manifest once all samples went through it. */
export interface PassOutputs {
  /** Files for the dataset root by name, e.g. `classes.txt`. */
  files?: Record<string, Uint8Array>;
  /** Fields for the manifest's record of this pass; JSON-serialisable and deterministic. */
  manifest?: Record<string, unknown>;
}

export interface PassDeclaredOutputs {
  files?: readonly string[];
  manifest?: readonly string[];
}

export interface Pass {
  /** e.g. `resize`, `tag`, `custom:crop.mjs`. */
  readonly name: string;
  /** Recorded in the manifest; JSON-serialisable and deterministic (no absolute paths, no times). */
  readonly params: Record<string, unknown>;
  /** Optional: sees every sample key in order before packing starts (tag=dirname builds its class list). */
  prepare?(keys: AsyncIterable<string>): Promise<void>;
  /**
   * Optional: what prepare() decided, JSON-serialisable (tag=dirname: its class list). A resume checks it is the same:
   * samples written before the interruption used it.
   */
  prepared?(): unknown;
  /**
   * Transforms one sample, or returns `'skip'` to leave it out of the dataset. Must not change `key`.
   * @throws ShardkitError INPUT when a member cannot be decoded; the pipeline decides to fail or skip. (A user's
   *   pass may throw anything: see runUserCode.)
   */
  run(sample: Sample, ctx: PassContext): Promise<Sample | 'skip'>;
  /** Optional: files for the dataset root and fields for the manifest, after all samples. */
  outputs?(): PassOutputs;
  /**
   * Optional: the file names and manifest fields outputs() may give, known before any sample is read, so that two
   * passes writing one are refused before packing starts rather than after every shard is written. They are the
   * pass's own: derive does not carry the source's files or fields of these names over, given or not.
   */
  readonly declares?: PassDeclaredOutputs;
  /**
   * Optional: counters for the pack report (e.g. samples without a label). Not for the manifest: a resumed pack
   * runs the pass over the remaining samples only, so these restart.
   */
  stats?(): Record<string, number>;
}

/** A user function usable as a pass: may be sync or async. */
export type SampleFunction = (sample: Sample, ctx: PassContext) => Sample | 'skip' | Promise<Sample | 'skip'>;

/**
 * Wraps a function as a pass whose results are checked (same key, members are byte arrays).
 * @param name recorded in the manifest, e.g. `custom:crop`.
 * @param params recorded in the manifest; must be JSON-serialisable.
 * @example
 * const dropEmpty = customPass('drop-empty', (s) => (s.members.txt?.length === 0 ? 'skip' : s));
 */
export function customPass(name: string, fn: SampleFunction, params: Record<string, unknown> = {}): Pass {
  if (typeof name !== 'string' || name === '') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a non-empty string for pass name but received ${JSON.stringify(name)}`);
  }
  if (typeof fn !== 'function') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a function for pass ${name} but received ${typeof fn}`);
  }
  checkParams(name, params);
  return {
    name,
    params,
    async run(sample, ctx) {
      return checkPassResult(name, sample.key, await runUserCode(name, sample.key, () => fn(sample, ctx)));
    },
  };
}

/**
 * Calls a user's pass on one sample. What it throws, other than a ShardkitError, is that sample's failure (INPUT,
 * naming the pass and the sample): the pack stops on it, or with `--on-error skip` leaves the sample out and lists
 * why. Not shardkit's internal error.
 */
export async function runUserCode<T>(name: string, key: string, call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw userFailure(err, `pass ${name} failed on sample ${key}`, key);
  }
}

/**
 * What a user's pass code threw, as shardkit reports it: a ShardkitError as it is, anything else as INPUT naming
 * where it failed (`pass crop failed in prepare()`) and the first line of its message. Not shardkit's internal error.
 */
export function userFailure(err: unknown, where: string, key?: string): ShardkitError {
  if (isShardkitError(err)) return err;
  const reason = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message.split('\n')[0]}` : String(err);
  return new ShardkitError(ErrorCodes.INPUT, `${where}: ${reason}`, { ...(key === undefined ? {} : { key }), cause: err });
}

/** @param what the value's role in the message: the params (default), or the manifest fields of outputs(). */
export function checkParams(name: string, params: unknown, what = 'the params'): asserts params is Record<string, unknown> {
  let ok = typeof params === 'object' && params !== null && !Array.isArray(params);
  try {
    ok &&= JSON.stringify(params) !== undefined;
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a JSON-serialisable object for ${what} of pass ${name}`);
  }
}

/** Checks what a user pass's outputs() returned: `{ files?: { name: Uint8Array }, manifest?: JSON object }`. */
export function checkPassOutputs(name: string, outputs: unknown): PassOutputs {
  if (outputs === undefined) return {};
  if (!isPlainRecord(outputs)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} outputs() returned ${describe(outputs)}; expected { files?, manifest? }`);
  }
  const { files, manifest } = outputs as PassOutputs;
  if (files !== undefined) {
    if (!isPlainRecord(files)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} outputs() returned files as ${describe(files)}; expected an object of file name -> Uint8Array`);
    for (const [file, bytes] of Object.entries(files)) {
      if (!(bytes instanceof Uint8Array)) {
        throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} outputs() returned file ${JSON.stringify(file)} as ${describe(bytes)}; files must be Uint8Array (or Buffer)`);
      }
    }
  }
  if (manifest !== undefined) checkParams(name, manifest, 'the manifest fields from outputs()');
  return outputs as PassOutputs;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks what a user pass returned: `'skip'`, or a sample with the same key and byte-array members. */
export function checkPassResult(name: string, key: string, result: unknown): Sample | 'skip' {
  if (result === 'skip') return result;
  const sample = result as Partial<Sample> | null | undefined;
  if (!isPlainRecord(sample) || typeof sample.members !== 'object' || sample.members === null) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} returned ${describe(result)} for sample ${key}; expected a sample { key, members } or 'skip'`, { key });
  }
  // an array would be stored as members named 0, 1, ...
  if (!isPlainRecord(sample.members)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} returned the members of sample ${key} as ${describe(sample.members)}; expected an object of extension -> Uint8Array`, { key });
  }
  if (sample.key !== key) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} changed the key of sample ${key} to ${JSON.stringify(sample.key)}; passes must keep keys (order and index depend on them)`, { key });
  }
  for (const [ext, bytes] of Object.entries(sample.members)) {
    if (!(bytes instanceof Uint8Array)) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass ${name} returned member ${JSON.stringify(ext)} of sample ${key} as ${describe(bytes)}; members must be Uint8Array (or Buffer)`, { key });
    }
  }
  return sample as Sample;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
