/** Runs the passes over one sample in order, and gathers what they leave for the dataset root and manifest. */
import { nodeCrypto } from '../lazy-crypto.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { ADOPTED_EXTRA_KEY, type Manifest } from '../../formats/manifest.js';
import type { Pass, PassContext } from '../passes/pass.js';
import type { DatasetWriter } from './dataset-writer.js';

export type PassResult = { kind: 'ok'; sample: Sample } | { kind: 'skip'; pass: string };

export async function runPasses(sample: Sample, passes: readonly Pass[], ctx: PassContext): Promise<PassResult> {
  let current = sample;
  for (const pass of passes) {
    const next = await pass.run(current, ctx);
    if (next === 'skip') return { kind: 'skip', pass: pass.name };
    current = next;
  }
  return { kind: 'ok', sample: current };
}

/** Each pass's counters (stats()), by pass name, for the summary and the pack report. */
export function passStatsOf(passes: readonly Pass[]): Record<string, Record<string, number>> {
  return Object.fromEntries(passes.filter((p) => p.stats).map((p) => [p.name, (p.stats as () => Record<string, number>)()]));
}

/**
 * The writer's `preparedDigest` option: a digest of what every pass's prepare() decided (see Pass.prepared), for the
 * resume journal; nothing when no pass reports one (journals of packs without such passes stay as they were).
 */
export function preparedOption(passes: readonly Pass[]): { preparedDigest?: string } {
  if (!passes.some((p) => p.prepared)) return {};
  return { preparedDigest: nodeCrypto().createHash('sha256').update(JSON.stringify(passes.map((p) => p.prepared?.() ?? null))).digest('hex') };
}

/** Gives every pass with prepare() the keys in order, each from a fresh iterator (keys are never held). */
export async function preparePasses(passes: readonly Pass[], keys: () => AsyncIterable<string>): Promise<void> {
  for (const pass of passes) if (pass.prepare) await pass.prepare(keys());
}

/**
 * A pass as the user can tell it from the others of the command line: its place and name, and the source it reads
 * (`pass 2 (tag=dirname)`, `pass 3 (tag=labels.csv)`, `pass 4 (custom:crop.mjs)`).
 */
export function passLabel(pass: Pass, i: number): string {
  const source = typeof pass.params.source === 'string' ? `=${pass.params.source}` : '';
  return `pass ${i + 1} (${pass.name}${source})`;
}

/** Claims on output names, refused when a second pass makes the same one. */
class OutputClaims {
  private readonly owner = new Map<string, string>();

  claim(kind: 'file' | 'manifest field', name: string, by: string): void {
    if (kind === 'manifest field' && name === ADOPTED_EXTRA_KEY) {
      // reindex reads it as "indexed from foreign tars" and would re-read the dataset under other naming rules
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `${by} writes the manifest field ${name}, which shardkit keeps for datasets made by \`shardkit index\`; name it otherwise`);
    }
    const key = `${kind}:${name}`;
    const first = this.owner.get(key);
    if (first !== undefined && first !== by) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `${first} and ${by} both write the ${kind} ${name}; keep one of them`);
    }
    this.owner.set(key, by);
  }
}

/**
 * Refuses, before any sample is read, two passes that declare one output file or manifest field (two tag passes
 * both write classes.txt): found after the passes ran, the conflict cost a whole pack.
 */
export function checkDeclaredOutputs(passes: readonly Pass[]): void {
  const claims = new OutputClaims();
  passes.forEach((pass, i) => {
    for (const name of pass.declares?.files ?? []) claims.claim('file', name, passLabel(pass, i));
    for (const name of pass.declares?.manifest ?? []) claims.claim('manifest field', name, passLabel(pass, i));
  });
}

/** Files and manifest fields from every pass; two passes claiming one name is an error, not a silent overwrite. */
export function collectPassOutputs(passes: readonly Pass[]): { files: Record<string, Uint8Array>; manifest: Record<string, unknown>; owners: Map<string, string> } {
  const files: Record<string, Uint8Array> = {};
  const manifest: Record<string, unknown> = {};
  const owners = new Map<string, string>();
  const claims = new OutputClaims();
  passes.forEach((pass, i) => {
    const label = passLabel(pass, i);
    const out = pass.outputs?.();
    for (const [name, bytes] of Object.entries(out?.files ?? {})) {
      claims.claim('file', name, label);
      owners.set(name, label);
      files[name] = bytes;
    }
    for (const [key, value] of Object.entries(out?.manifest ?? {})) {
      claims.claim('manifest field', key, label);
      manifest[key] = value;
    }
  });
  return { files, manifest, owners };
}

/** Files and manifest fields a dataset already had (derive's source), which the passes' own replace. */
export interface InheritedOutputs {
  files: ReadonlyMap<string, Uint8Array>;
  extra: Record<string, unknown>;
}

/**
 * Adds what the passes leave (files, manifest fields) to the writer and commits the dataset. `inherited` goes in
 * first, but not what a pass declares as its own (Pass.declares), whether it writes it or not: a new tag pass's
 * classes.txt is the list its cls members index, and a tag table of integer labels leaves no list to go stale.
 */
export async function finishWithPassOutputs(writer: DatasetWriter, passes: readonly Pass[], inherited?: InheritedOutputs): Promise<Manifest> {
  const ownFiles = new Set(passes.flatMap((p) => p.declares?.files ?? []));
  const ownFields = new Set(passes.flatMap((p) => p.declares?.manifest ?? []));
  for (const [name, bytes] of inherited?.files ?? []) if (!ownFiles.has(name)) writer.addFile(name, bytes, 'the source dataset');
  for (const [k, v] of Object.entries(inherited?.extra ?? {})) if (!ownFields.has(k)) writer.setExtra(k, v);
  const outputs = collectPassOutputs(passes);
  for (const [name, bytes] of Object.entries(outputs.files)) writer.addFile(name, bytes, outputs.owners.get(name));
  for (const [k, v] of Object.entries(outputs.manifest)) writer.setExtra(k, v);
  return writer.finish();
}
