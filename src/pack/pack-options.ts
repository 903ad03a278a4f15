/**
 * The library's `pack()` and `derive()` options, checked at the boundary with sharp-style messages ("Expected ... for NAME but
 * received VALUE of type T"), before anything is walked or written: a wrong value fails as INVALID_ARG naming the
 * option, not as a TypeError from deep inside the pack.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { KEY_RULES } from '../../formats/sample.js';
import { expectBoolean } from '../io/io-options.js';
import type { Pass } from '../passes/pass.js';
import type { DeriveOptions } from './derive.js';
import type { PackOptions } from './pack.js';

/** A value for a message: strings quoted, objects by their kind (`[object Array]`), at most 60 characters. */
function received(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if ((typeof value === 'object' && value !== null) || typeof value === 'function') text = Array.isArray(value) ? '[object Array]' : Object.prototype.toString.call(value);
  else text = String(value);
  return `${text.length > 60 ? `${text.slice(0, 60)}...` : text} of type ${typeof value}`;
}

function invalid(expected: string, name: string, value: unknown, hint = ''): never {
  throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected ${expected} for ${name} but received ${received(value)}${hint}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.prototype.toString.call(value) === '[object Object]';
}

/**
 * The passes option: an array of {@link Pass} objects (`{ name, params, run }`, as parsePassSpec, loadPassModule,
 * customPass and the pass factories make them). A spec string (`'resize=224x224'`) is refused with a pointer to
 * parsePassSpec.
 */
export function expectPasses(value: unknown, name = 'passes'): Pass[] {
  if (!Array.isArray(value)) invalid('an array of passes', name, value);
  (value as unknown[]).forEach((pass, i) => {
    const at = `${name}[${i}]`;
    if (typeof pass === 'string') {
      invalid('a pass object { name, params, run }', at, pass, `; make one from a spec with parsePassSpec(${JSON.stringify(pass)}, { cwd })`);
    }
    if (typeof pass === 'function') invalid('a pass object { name, params, run }', at, pass, '; customPass(name, fn) makes a pass of a function');
    if (typeof pass !== 'object' || pass === null) invalid('a pass object { name, params, run }', at, pass);
    const p = pass as Partial<Pass>;
    if (typeof p.name !== 'string' || p.name === '') invalid('a non-empty string', `${at}.name`, p.name);
    if (typeof p.run !== 'function') invalid('a function (sample, ctx) => Promise<sample | "skip">', `${at}.run`, p.run, `; customPass(name, fn) makes a pass of a function`);
    if (!isPlainObject(p.params)) invalid('an object', `${at}.params`, p.params);
  });
  return value as Pass[];
}

function expectOptionalBoolean(options: Record<string, unknown>, name: string): void {
  if (options[name] !== undefined) expectBoolean(name, options[name]);
}

function expectOptionalStrings(options: Record<string, unknown>, name: string): void {
  const value = options[name];
  if (value === undefined) return;
  if (!Array.isArray(value)) invalid('an array of glob strings', name, value);
  (value as unknown[]).forEach((glob, i) => {
    if (typeof glob !== 'string' || glob === '') invalid('a non-empty glob string', `${name}[${i}]`, glob);
  });
}

/**
 * Checks the options of `pack()` that it uses itself (the writer's own, such as layout and shardBytes, it checks as
 * DatasetWriter does): their types, and the passes.
 * @throws ShardkitError INVALID_ARG naming the option.
 */
export function validatePackOptions(options: unknown): PackOptions {
  if (!isPlainObject(options)) invalid('an object { source, out?, ... }', 'pack options', options);
  const o = options as Record<string, unknown>;
  if (typeof o.source !== 'string' || o.source === '') invalid('a source directory path', 'source', o.source);
  if (o.out !== undefined && (typeof o.out !== 'string' || o.out === '')) invalid('an output directory path', 'out', o.out);
  if (o.passes !== undefined) expectPasses(o.passes);
  if (o.keyRule !== undefined && !(KEY_RULES as readonly unknown[]).includes(o.keyRule)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of ${KEY_RULES.join(', ')} for keyRule but received ${JSON.stringify(o.keyRule)}`);
  }
  for (const name of ['resume', 'force', 'followSymlinks', 'includeHidden', 'groupNumbered', 'sync', 'prescan', 'verifySource']) expectOptionalBoolean(o, name);
  expectOptionalStrings(o, 'include');
  expectOptionalStrings(o, 'exclude');
  const part = o.part as { index?: unknown; count?: unknown } | undefined;
  if (part !== undefined) {
    const ok = isPlainObject(part) && Number.isSafeInteger(part.index) && Number.isSafeInteger(part.count) && (part.count as number) >= 1 && (part.count as number) <= 65_536 && (part.index as number) >= 0 && (part.index as number) < (part.count as number);
    if (!ok) invalid('{ index, count } with 0 <= index < count <= 65536 (parsePart("I/N") makes one)', 'part', part);
  }
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') invalid('a function', 'onProgress', o.onProgress);
  return o as unknown as PackOptions;
}

/**
 * Checks the options of `derive()` that it uses itself, as validatePackOptions does for pack(): the source dataset
 * and output, the passes (at least one), the flags and the progress callback.
 * @throws ShardkitError INVALID_ARG naming the option.
 */
export function validateDeriveOptions(options: unknown): DeriveOptions {
  if (!isPlainObject(options)) invalid('an object { dataset, out, passes, ... }', 'derive options', options);
  const o = options as Record<string, unknown>;
  if (typeof o.dataset !== 'string' || o.dataset === '') invalid('a dataset directory or URL', 'dataset', o.dataset);
  if (typeof o.out !== 'string' || o.out === '') invalid('an output directory path', 'out', o.out);
  if (expectPasses(o.passes).length === 0 && o.select === undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'derive needs at least one --pass, or a --select');
  for (const name of ['resume', 'force']) expectOptionalBoolean(o, name);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') invalid('a function', 'onProgress', o.onProgress);
  return o as unknown as DeriveOptions;
}
