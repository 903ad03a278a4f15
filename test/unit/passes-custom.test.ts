/** parsePassSpec, and custom passes: customPass and pass modules loaded from a file. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { loadPassModule } from '../../src/passes/load-pass-module.js';
import { customPass, type Pass } from '../../src/passes/pass.js';
import { errorOf } from '../helpers/error-of.js';
import { spec, member, text, usePassFixtures } from '../helpers/pass-fixtures.js';

const { tmp, count, fixture, run, prepared } = usePassFixtures();

describe('parsePassSpec', () => {
  it('records deterministic params', () => {
    expect(spec('resize=224x224').params).toEqual({ width: 224, height: 224, fit: 'inside' });
    expect(spec('normalize').params).toEqual({ mode: 'contrast' });
    expect(spec('normalize=0.5:0.25').params).toEqual({ mode: 'tensor', mean: [0.5], std: [0.25], layout: 'CHW', dtype: 'float32' });
    expect(spec('tag=dirname').params).toEqual({ source: 'dirname' });
  });

  it('rejects unknown passes and missing values', () => {
    expect(() => spec('blur=3')).toThrow('Expected one of resize, normalize, format, tag for --pass but received "blur=3"');
    expect(() => spec('tag')).toThrow(/tag=dirname/);
    expect(() => spec('format')).toThrow(/format=jpeg/);
  });
});

describe('custom passes', () => {
  it('customPass checks results', async () => {
    const sample = fixture('cat/001').sample;
    const keyChanger = customPass('rename', (s) => ({ ...s, key: 'other' }));
    expect(await errorOf(keyChanger.run(sample, {}))).toSatisfy((e) => isShardkitError(e, ErrorCodes.INVALID_ARG) && /changed the key/.test((e as Error).message));
    const stringMember = customPass('str', (s) => ({ ...s, members: { txt: 'hi' as unknown as Uint8Array } }));
    expect(await errorOf(stringMember.run(sample, {}))).toSatisfy((e) => /members must be Uint8Array/.test((e as Error).message));
    const arrayMembers = customPass('arr', (s) => ({ key: s.key, members: Object.values(s.members) as unknown as Sample['members'] }));
    expect(await errorOf(arrayMembers.run(sample, {}))).toSatisfy((e) => isShardkitError(e, ErrorCodes.INVALID_ARG) && (e as Error).message === 'Pass arr returned the members of sample cat/001 as an array; expected an object of extension -> Uint8Array');
    expect(await customPass('skip', () => 'skip').run(sample, {})).toBe('skip');
    expect(() => customPass('p', (s) => s, { bad: 1n } as Record<string, unknown>)).toThrow(/JSON-serialisable/);
  });

  it('loads a module exporting a function, a pass object or an array', async () => {
    await writeFile(
      join(tmp(), 'mark.mjs'),
      "export default async (sample, ctx) => sample.key.startsWith('broken') ? 'skip' : ({ ...sample, members: { ...sample.members, mark: new TextEncoder().encode(Object.keys(ctx.paths ?? {}).join(',')) } });\n",
    );
    const [mark] = await loadPassModule(join(tmp(), 'mark.mjs'));
    expect(mark?.name).toBe('custom:mark.mjs');
    expect(mark?.params).toMatchObject({ module: 'mark.mjs' });
    expect(text(member(await run(mark as Pass, 'cat/001'), 'mark'))).toBe('jpg,txt');
    expect(await (mark as Pass).run(fixture('broken/006').sample, {})).toBe('skip');

    await writeFile(
      join(tmp(), 'many.mjs'),
      [
        'let seen = 0;',
        "const counter = { name: 'count', params: { v: 1 }, async prepare(keys) { for await (const _ of keys) seen++; }, async run(s) { return s; }, outputs() { return { manifest: { seen } }; } };",
        'export default [counter, (s) => s];',
      ].join('\n'),
    );
    const passes = await loadPassModule(join(tmp(), 'many.mjs'));
    expect(passes.map((p) => p.name)).toEqual(['count', 'custom:many.mjs#1']);
    await prepared(passes[0] as Pass);
    expect(passes[0]?.outputs?.()).toEqual({ manifest: { seen: count() } });
    expect(passes[0]?.params).toEqual({ v: 1 });
  });

  it("reports what a pass object's prepare() and outputs() throw or wrongly return naming the pass, not as shardkit's bug", async () => {
    await writeFile(
      join(tmp(), 'hooks.mjs'),
      [
        "const prep = { name: 'prep', run: (s) => s, async prepare(keys) { for await (const k of keys) throw new Error('bad key list\\nmore'); } };",
        "const out = { name: 'out', run: (s) => s, outputs() { throw new TypeError('stats file missing'); } };",
        "const big = { name: 'big', run: (s) => s, outputs() { return { manifest: { count: 10n } }; } };",
        "const str = { name: 'str', run: (s) => s, outputs() { return { files: { 'notes.txt': 'text' } }; } };",
        'export default [prep, out, big, str];',
      ].join('\n'),
    );
    const [prep, out, big, str] = (await loadPassModule(join(tmp(), 'hooks.mjs'))) as Pass[];
    const prepErr = await errorOf(prepared(prep as Pass));
    expect(isShardkitError(prepErr, ErrorCodes.INPUT) && prepErr.message).toBe('pass prep failed in prepare(): bad key list');
    const outErr = await errorOf(Promise.resolve().then(() => out?.outputs?.()));
    expect(isShardkitError(outErr, ErrorCodes.INPUT) && outErr.message).toBe('pass out failed in outputs(): TypeError: stats file missing');
    expect(() => big?.outputs?.()).toThrow('Expected a JSON-serialisable object for the manifest fields from outputs() of pass big');
    expect(() => str?.outputs?.()).toThrow('Pass str outputs() returned file "notes.txt" as a string; files must be Uint8Array (or Buffer)');
  });

  it.each([
    ['nodefault.mjs', 'export const x = 1;', /no default export/],
    ['number.mjs', 'export default 42;', /exports number; expected a function/],
    ['syntax.mjs', 'export default (', /Cannot load pass module/],
  ])('%s is rejected', async (name, source, message) => {
    await writeFile(join(tmp(), name), source);
    const err = await errorOf(loadPassModule(join(tmp(), name)));
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG)).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it('names a missing module', async () => {
    const err = await errorOf(loadPassModule(join(tmp(), 'nope.mjs')));
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG) && (err as Error).message.includes('nope.mjs')).toBe(true);
  });
});
