/** pack()'s options are checked at the boundary: INVALID_ARG naming the option, before anything is walked or written. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { openDataset } from '../../src/read/dataset.js';
import { derive, type DeriveOptions } from '../../src/pack/derive.js';
import { pack, type PackOptions } from '../../src/pack/pack.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import { customPass } from '../../src/passes/pass.js';
import { tmpDir } from '../helpers/tmp.js';

function source(): string {
  const dir = tmpDir();
  fs.writeFileSync(path.join(dir, 'a.txt'), 'a');
  fs.writeFileSync(path.join(dir, 'b.txt'), 'b');
  return dir;
}

describe('pack options', () => {
  it('refuses options of the wrong type with INVALID_ARG naming the option, and writes nothing', async () => {
    const src = source();
    const root = tmpDir();
    const cases: [string, unknown, string][] = [
      ['no options', undefined, 'Expected an object { source, out?, ... } for pack options but received undefined of type undefined'],
      ['a string', src, `Expected an object { source, out?, ... } for pack options but received ${JSON.stringify(src)} of type string`],
      ['no source', { out: 'x' }, 'Expected a source directory path for source but received undefined of type undefined'],
      ['a number source', { source: 42 }, 'Expected a source directory path for source but received 42 of type number'],
      ['an empty out', { source: src, out: '' }, 'Expected an output directory path for out but received "" of type string'],
      ['a spec string as a pass', { source: src, passes: ['resize=10x10'] }, 'Expected a pass object { name, params, run } for passes[0] but received "resize=10x10" of type string; make one from a spec with parsePassSpec("resize=10x10", { cwd })'],
      ['a string for passes', { source: src, passes: 'x' }, 'Expected an array of passes for passes but received "x" of type string'],
      ['a pass without run', { source: src, passes: [{ name: 'x', params: {} }] }, 'Expected a function (sample, ctx) => Promise<sample | "skip"> for passes[0].run but received undefined of type undefined; customPass(name, fn) makes a pass of a function'],
      ['a pass without params', { source: src, passes: [{ name: 'x', run: async (s: unknown) => s }] }, 'Expected an object for passes[0].params but received undefined of type undefined'],
      ['a pass without a name', { source: src, passes: [{ params: {}, run: async (s: unknown) => s }] }, 'Expected a non-empty string for passes[0].name but received undefined of type undefined'],
      ['a function as a pass', { source: src, passes: [(s: unknown) => s] }, 'Expected a pass object { name, params, run } for passes[0] but received [object Function] of type function; customPass(name, fn) makes a pass of a function'],
      ['null as a pass', { source: src, passes: [null] }, 'Expected a pass object { name, params, run } for passes[0] but received null of type object'],
      ['a string include', { source: src, include: '*.txt' }, 'Expected an array of glob strings for include but received "*.txt" of type string'],
      ['a number in exclude', { source: src, exclude: [1] }, 'Expected a non-empty glob string for exclude[0] but received 1 of type number'],
      ['a string for includeHidden', { source: src, includeHidden: 'yes' }, 'Expected boolean for includeHidden but received yes of type string'],
      ['a number for resume', { source: src, resume: 1 }, 'Expected boolean for resume but received 1 of type number'],
      ['a part out of range', { source: src, part: { index: 2, count: 2 } }, 'Expected { index, count } with 0 <= index < count <= 65536 (parsePart("I/N") makes one) for part but received [object Object] of type object'],
      ['a string part', { source: src, part: '0/2' }, 'Expected { index, count } with 0 <= index < count <= 65536 (parsePart("I/N") makes one) for part but received "0/2" of type string'],
      ['a string onProgress', { source: src, onProgress: 'log' }, 'Expected a function for onProgress but received "log" of type string'],
    ];
    for (const [label, options, message] of cases) {
      const out = path.join(root, label.replace(/ /g, '-'));
      const withOut = typeof options === 'object' && options !== null && !('out' in options) ? { ...options, out } : options;
      await expect(pack(withOut as PackOptions), label).rejects.toMatchObject({ name: 'ShardkitError', code: ErrorCodes.INVALID_ARG, message });
      expect(fs.existsSync(out), label).toBe(false);
    }
    expect(fs.readdirSync(src).sort()).toEqual(['a.txt', 'b.txt']);
  });

  it('takes Pass objects, as parsePassSpec and customPass make them', async () => {
    const src = source();
    const out = path.join(tmpDir(), 'ds');
    const upper = customPass('upper', (s) => ({ ...s, members: { ...s.members, up: new TextEncoder().encode(s.key.toUpperCase()) } }));
    const r = await pack({ source: src, out, passes: [parsePassSpec('normalize', { cwd: src }), upper], includeHidden: false, include: ['*.txt'] });
    expect(r.manifest.passes.map((p) => p.name)).toEqual(['normalize', 'upper']);
    const ds = await openDataset(out);
    expect(new TextDecoder().decode((await ds.get('b')).members.up)).toBe('B');
    await ds.close();
  });

  it("derive's options too: INVALID_ARG naming the option, before the source is opened", async () => {
    const src = source();
    const ds = path.join(tmpDir(), 'ds');
    await pack({ source: src, out: ds });
    const out = path.join(tmpDir(), 'v');
    const pass = customPass('same', (s) => s);
    const cases: [string, unknown, string][] = [
      ['no options', undefined, 'Expected an object { dataset, out, passes, ... } for derive options but received undefined of type undefined'],
      ['no passes', { dataset: ds, out }, 'Expected an array of passes for passes but received undefined of type undefined'],
      ['no pass', { dataset: ds, out, passes: [] }, 'derive needs at least one --pass, or a --select'],
      ['a spec string', { dataset: ds, out, passes: ['resize=8x8'] }, 'Expected a pass object { name, params, run } for passes[0] but received "resize=8x8" of type string; make one from a spec with parsePassSpec("resize=8x8", { cwd })'],
      ['no dataset', { out, passes: [pass] }, 'Expected a dataset directory or URL for dataset but received undefined of type undefined'],
      ['no out', { dataset: ds, passes: [pass] }, 'Expected an output directory path for out but received undefined of type undefined'],
      ['a string force', { dataset: ds, out, passes: [pass], force: 'yes' }, 'Expected boolean for force but received yes of type string'],
    ];
    for (const [label, options, message] of cases) {
      await expect(derive(options as DeriveOptions), label).rejects.toMatchObject({ name: 'ShardkitError', code: ErrorCodes.INVALID_ARG, message });
      expect(fs.existsSync(out), label).toBe(false);
    }
    expect((await derive({ dataset: ds, out, passes: [pass] })).manifest.totals.samples).toBe(2);
  });
});
