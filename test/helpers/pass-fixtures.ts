/**
 * The image fixtures (fixtures/images) that the pass tests run passes on, and the small helpers they share.
 * usePassFixtures() registers the loading (and a temp dir) in the calling test file's beforeAll/afterAll.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Sample } from '../../formats/sample.js';
import { configureSharpForPacking, imageConcurrency } from '../../src/passes/image-concurrency.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import type { Pass, PassContext } from '../../src/passes/pass.js';
import { IMAGE_FIXTURES, loadImageFixtures, type FixtureSample } from './fixture-samples.js';
import { makeTempDir, removeTree } from './source-tree.js';

export interface PassFixtures {
  /** This test file's temp dir (removed after its tests). */
  tmp(): string;
  /** How many fixture samples there are. */
  count(): number;
  fixture(key: string): FixtureSample;
  /** Runs `pass` on fixture `key` (ctx: the fixture's source paths); a skip fails the test. */
  run(pass: Pass, key: string, ctx?: PassContext): Promise<Sample>;
  /** `pass` after its prepare() has seen every fixture key. */
  prepared(pass: Pass): Promise<Pass>;
}

export function usePassFixtures(): PassFixtures {
  let fixtures: Map<string, FixtureSample> | undefined;
  let tmp: string | undefined;
  beforeAll(async () => {
    await configureSharpForPacking(imageConcurrency(2));
    fixtures = await loadImageFixtures();
    tmp = await makeTempDir('shardkit-passes-');
  });
  afterAll(async () => {
    if (tmp !== undefined) await removeTree(tmp);
  });
  const loaded = (): Map<string, FixtureSample> => {
    if (fixtures === undefined) throw new Error('the pass fixtures are loaded in beforeAll');
    return fixtures;
  };
  const fixture = (key: string): FixtureSample => {
    const f = loaded().get(key);
    if (f === undefined) throw new Error(`no fixture ${key}`);
    return f;
  };
  return {
    tmp: () => {
      if (tmp === undefined) throw new Error('the temp dir is made in beforeAll');
      return tmp;
    },
    count: () => loaded().size,
    fixture,
    run: async (pass, key, ctx) => {
      const f = fixture(key);
      const out = await pass.run(f.sample, ctx ?? { paths: f.paths });
      if (out === 'skip') throw new Error('unexpected skip');
      return out;
    },
    prepared: async (pass) => {
      const keys = loaded().keys();
      await pass.prepare?.(
        (async function* () {
          yield* keys;
        })(),
      );
      return pass;
    },
  };
}

/** A pass from its --pass text, with files named relative to the image fixtures. */
export const spec = (text: string): Pass => parsePassSpec(text, { cwd: IMAGE_FIXTURES });

export function member(sample: Sample, ext: string): Uint8Array {
  const bytes = sample.members[ext];
  if (bytes === undefined) throw new Error(`sample ${sample.key} has no member ${ext} (has ${Object.keys(sample.members).join(', ')})`);
  return bytes;
}

export const text = (bytes: Uint8Array | undefined): string => new TextDecoder().decode(bytes);
