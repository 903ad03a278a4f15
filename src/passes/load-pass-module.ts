/** `--pass-module FILE.mjs`: passes written by the user as an ES module. */
import { nodeCrypto } from '../lazy-crypto.js';
import { readFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from '../io/location.js';
import { checkParams, checkPassOutputs, checkPassResult, customPass, runUserCode, userFailure, type Pass, type PassDeclaredOutputs, type SampleFunction } from './pass.js';

/**
 * Imports a module whose default export is a function `(sample, ctx) => sample | 'skip'` (sync or async), a
 * {@link Pass} object, or an array of them, and returns the passes in order. A plain function becomes a pass
 * named `custom:<file name>` (`custom:<file name>#<i>` for the i-th element of an array) whose params record the
 * file name and the SHA-256 of the module's source, so the manifest says which code made the data (imports of
 * the module are not covered). Results are checked: same key, byte-array members, or 'skip'.
 * @param file path to the module, resolved against `cwd` (default: the process's working directory).
 * @throws ShardkitError INVALID_ARG when the module cannot be read or imported, or exports something else.
 * @example
 * // flip.mjs: export default async (sample) => ({ ...sample, members: { ...sample.members, flipped: new Uint8Array([1]) } });
 * const passes = await loadPassModule('flip.mjs');
 */
export async function loadPassModule(file: string, cwd = process.cwd()): Promise<Pass[]> {
  const abs = resolve(cwd, expectLocalPath('--pass-module', file));
  const name = basename(abs);
  let source: Buffer;
  let mod: { default?: unknown };
  try {
    source = await readFile(abs);
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (err) {
    if (err instanceof ShardkitError) throw err;
    const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Cannot load pass module ${file}: ${reason}`, { file, cause: err });
  }
  const sha256 = nodeCrypto().createHash('sha256').update(source).digest('hex');
  const exported = mod.default;
  if (exported === undefined) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass module ${file} has no default export; export a function (sample) => sample | 'skip', a pass or an array of them`, { file });
  }
  const items = Array.isArray(exported) ? exported : [exported];
  if (items.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Pass module ${file} exports an empty array`, { file });
  return items.map((item: unknown, i) => {
    const label = Array.isArray(exported) ? `custom:${name}#${i}` : `custom:${name}`;
    if (typeof item === 'function') return customPass(label, item as SampleFunction, { module: name, sha256 });
    if (isPassLike(item)) return checkedPass(item);
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Pass module ${file} exports ${typeof item}${Array.isArray(exported) ? ` at index ${i}` : ''}; expected a function or a pass { name, run }`,
      { file },
    );
  });
}

function checkDeclares(name: string, declares: unknown): PassDeclaredOutputs {
  const d = declares as PassDeclaredOutputs | null;
  const names = (v: unknown): boolean => v === undefined || (Array.isArray(v) && v.every((s) => typeof s === 'string'));
  if (typeof d !== 'object' || d === null || !names(d.files) || !names(d.manifest)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected { files?: string[], manifest?: string[] } for declares of pass ${name}`);
  }
  return { ...(d.files === undefined ? {} : { files: [...d.files] }), ...(d.manifest === undefined ? {} : { manifest: [...d.manifest] }) };
}

function callHook<T>(name: string, hook: string, call: () => T): T {
  try {
    return call();
  } catch (err) {
    throw userFailure(err, `pass ${name} failed in ${hook}()`);
  }
}

function isPassLike(value: unknown): value is Partial<Pass> & Pick<Pass, 'name' | 'run'> {
  const v = value as Partial<Pass> | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && v.name !== '' && typeof v.run === 'function';
}

/** Wraps a user's pass object: default params, checked results, methods still called on the user's object. */
function checkedPass(user: Partial<Pass> & Pick<Pass, 'name' | 'run'>): Pass {
  const params = user.params ?? {};
  checkParams(user.name, params);
  const pass: Pass = {
    name: user.name,
    params,
    async run(sample, ctx) {
      return checkPassResult(user.name, sample.key, await runUserCode(user.name, sample.key, () => user.run(sample, ctx)));
    },
    ...(user.declares === undefined ? {} : { declares: checkDeclares(user.name, user.declares) }),
  };
  // what the hooks throw or return is the user's, reported naming the pass, like run()'s
  if (typeof user.prepare === 'function') {
    const prepare = user.prepare;
    pass.prepare = async (keys) => {
      try {
        await prepare.call(user, keys);
      } catch (err) {
        throw userFailure(err, `pass ${user.name} failed in prepare()`);
      }
    };
  }
  if (typeof user.prepared === 'function') {
    const prepared = user.prepared;
    pass.prepared = () => callHook(user.name, 'prepared', () => prepared.call(user));
  }
  if (typeof user.outputs === 'function') {
    const outputs = user.outputs;
    pass.outputs = () => checkPassOutputs(user.name, callHook(user.name, 'outputs', () => outputs.call(user)));
  }
  if (typeof user.stats === 'function') {
    const stats = user.stats;
    pass.stats = () => callHook(user.name, 'stats', () => stats.call(user));
  }
  return pass;
}
