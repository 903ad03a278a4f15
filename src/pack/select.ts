/**
 * Exemplar selection for `derive --select`: which samples of a dataset a smaller one keeps, seeded and deterministic.
 * - `random:N`: N samples chosen uniformly without replacement (all of them when the dataset has at most N).
 * - `fraction:F`: round(F x size) samples chosen the same way, 0 < F <= 1.
 * - `per-class:N`: N samples of each class (of the `cls` member), each class's chosen uniformly without replacement
 *   (all of a class that has at most N): a reservoir per class over the samples in key order, seeded per class.
 * The chosen samples keep their key order.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { Dataset } from '../read/dataset.js';
import { identityOrder } from '../read/shuffle/fisher-yates.js';
import { rngFor, type Seed } from '../read/shuffle/prng.js';
import { expectSeed } from '../read/shuffle/shuffle-args.js';

export type Selection = { mode: 'random'; count: number } | { mode: 'per-class'; count: number } | { mode: 'fraction'; fraction: number };

const SPEC_HELP = 'random:N, per-class:N or fraction:F (0 < F <= 1), e.g. per-class:20';

/**
 * Parses `--select SPEC`.
 * @throws ShardkitError INVALID_ARG naming the spec and what was expected.
 */
export function parseSelection(spec: string): Selection {
  const m = /^(random|per-class|fraction):(.+)$/.exec(spec.trim());
  const bad = (): never => {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected ${SPEC_HELP} for --select but received ${JSON.stringify(spec)}`);
  };
  if (m === null) return bad();
  const [, mode, value] = m as unknown as [string, string, string];
  if (mode === 'fraction') {
    const f = /^(\d+\.?\d*|\.\d+)$/.test(value) ? Number(value) : NaN;
    if (!(f > 0 && f <= 1)) return bad();
    return { mode, fraction: f };
  }
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) return bad();
  return { mode: mode as 'random' | 'per-class', count: n };
}

export function selectionLabel(s: Selection): string {
  return s.mode === 'fraction' ? `fraction:${s.fraction}` : `${s.mode}:${s.count}`;
}

/** The positions (key order) of the samples `selection` keeps, ascending. */
export async function selectPositions(ds: Dataset, selection: Selection, seed: Seed): Promise<Uint32Array> {
  expectSeed(seed);
  if (selection.mode === 'per-class') return perClass(ds, selection.count, seed);
  const count = selection.mode === 'random' ? Math.min(selection.count, ds.size) : Math.round(selection.fraction * ds.size);
  return uniformChoice(ds.size, count, seed);
}

/** `count` distinct positions of `size`, uniformly (a seeded partial Fisher–Yates), ascending. */
export function uniformChoice(size: number, count: number, seed: Seed): Uint32Array {
  const rng = rngFor(seed, 0, 'select-random');
  const order = identityOrder(size);
  for (let k = 0; k < count; k++) {
    const j = k + rng.nextBelow(size - k);
    const held = order[k] as number;
    order[k] = order[j] as number;
    order[j] = held;
  }
  return order.subarray(0, count).sort();
}

/** A reservoir of `count` per class over every sample in key order, each class with its own seeded generator. */
async function perClass(ds: Dataset, count: number, seed: Seed): Promise<Uint32Array> {
  const reservoirs = new Map<string, { seen: number; kept: number[]; rng: ReturnType<typeof rngFor> }>();
  const decoder = new TextDecoder();
  for await (const entry of ds.entries()) {
    if (!entry.members.some((m) => m.ext === 'cls')) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `--select per-class needs a cls member in every sample, and ${entry.key} has none; tag the dataset first (derive --pass tag=dirname)`, { key: entry.key });
    }
    const cls = decoder.decode((await ds.read(entry)).members.cls).trim();
    let r = reservoirs.get(cls);
    if (r === undefined) {
      r = { seen: 0, kept: [], rng: rngFor(seed, 0, `select-class-${cls}`) };
      reservoirs.set(cls, r);
    }
    if (r.kept.length < count) r.kept.push(entry.position);
    else {
      const j = r.rng.nextBelow(r.seen + 1);
      if (j < count) r.kept[j] = entry.position;
    }
    r.seen++;
  }
  return Uint32Array.from([...reservoirs.values()].flatMap((r) => r.kept)).sort();
}
