/** The tag pass: labels from parent directory names or from a CSV/JSON label table. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { parseCsvLabelTable, parseJsonLabelTable } from '../../src/passes/label-table.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import { errorOf } from '../helpers/error-of.js';
import { spec, member, text, usePassFixtures } from '../helpers/pass-fixtures.js';

const { tmp, fixture, run, prepared } = usePassFixtures();

describe('tag=dirname', () => {
  it('indexes sorted parent directory names and writes classes.txt', async () => {
    const pass = await prepared(spec('tag=dirname'));
    expect(text(member(await run(pass, 'cat/001'), 'cls'))).toBe('1');
    expect(text(member(await run(pass, 'dog/004'), 'cls'))).toBe('2');
    expect(text(member(await run(pass, 'broken/006'), 'cls'))).toBe('0');
    const root = await run(pass, 'labels');
    expect(root).toBe(fixture('labels').sample);
    expect(pass.outputs?.()).toEqual({
      files: { 'classes.txt': new TextEncoder().encode('broken\ncat\ndog\n') },
      manifest: { classes: ['broken', 'cat', 'dog'] },
    });
    expect(pass.stats?.()).toEqual({ tagged: 3, untagged: 1, staleClsRemoved: 0 });
  });

  it('needs prepare() before run', async () => {
    const err = await errorOf(spec('tag=dirname').run(fixture('cat/001').sample, {}));
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG)).toBe(true);
  });
});

describe('tag=FILE', () => {
  it('labels.csv: class names by path, classes sorted, samples without a row untouched and counted', async () => {
    const pass = spec('tag=labels.csv');
    expect(pass.params).toMatchObject({ source: 'labels.csv', mode: 'cls', rows: 4 });
    expect(pass.params.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(text(member(await run(pass, 'cat/001'), 'cls'))).toBe('0');
    expect(text(member(await run(pass, 'dog/004'), 'cls'))).toBe('1');
    expect(await run(pass, 'dog/005')).toBe(fixture('dog/005').sample);
    expect(pass.stats?.()).toEqual({ tagged: 2, untagged: 1, staleClsRemoved: 0, unusedRows: 2 });
    expect(pass.outputs?.().manifest).toEqual({ classes: ['cat', 'dog'] });
  });

  it('label tables: a JSON object naming an id twice, a table without rows, CR line ends, a column named __proto__', () => {
    expect(() => parseJsonLabelTable('{"cat/001.jpg": "cat", "x": {"a": 1, "a": 2}, "cat/001.jpg": "dog"}', 'l.json')).toThrow('l.json: entry "cat/001.jpg" appears twice');
    expect(() => parseJsonLabelTable('{"a\\u002fb": 1, "a/b": 2}', 'l.json')).toThrow('l.json: entry "a/b" appears twice');
    expect(parseJsonLabelTable('{"x": {"a": 1, "a": 2}, "y": {"a": 3}}', 'l.json').rows.size).toBe(2); // names inside a row are the row's
    for (const [text, file] of [['{}', 'l.json'], ['[]', 'l.json'], ['path,label\n', 'l.csv']] as const) {
      const parse = file.endsWith('.csv') ? parseCsvLabelTable : parseJsonLabelTable;
      expect(() => parse(text, file), text).toThrow(`${file}: the table has no rows`);
    }
    const cr = parseCsvLabelTable('path,label\rcat/001.jpg,cat\rdog/003.webp,dog\r', 'l.csv');
    expect([cr.mode, [...(cr.classIndex ?? [])], cr.classes]).toEqual(['cls', [['cat/001.jpg', 0], ['dog/003.webp', 1]], ['cat', 'dog']]);
    // integer labels are indexes as they are, -1 too; any other label makes them all class names
    const ints = parseCsvLabelTable('path,label\na.jpg,2\nb.jpg,-1\nc.jpg,10\n', 'l.csv');
    expect([ints.mode, [...(ints.classIndex ?? [])], ints.classes]).toEqual(['cls', [['a.jpg', 2], ['b.jpg', -1], ['c.jpg', 10]], undefined]);
    const jsonInts = parseJsonLabelTable('{"a.jpg": 2, "b.jpg": -1}', 'l.json');
    expect([...(jsonInts.classIndex ?? [])]).toEqual([['a.jpg', 2], ['b.jpg', -1]]);
    const named = parseCsvLabelTable('path,label\na.jpg,2\nb.jpg,x\n', 'l.csv');
    expect([[...(named.classIndex ?? [])], named.classes]).toEqual([[['a.jpg', 0], ['b.jpg', 1]], ['2', 'x']]);
    const proto = parseCsvLabelTable('path,__proto__,x\na.jpg,cat,1\n', 'l.csv');
    expect(JSON.stringify(proto.rows.get('a.jpg'))).toBe('{"__proto__":"cat","x":"1"}');
  });

  it('matches a row by the key of its path when the sample has only renamed members (derive after format=webp)', async () => {
    const webp = await run(spec('format=webp'), 'cat/001');
    const tag = spec('tag=labels.csv');
    // derive knows only the members' current paths
    const out = await tag.run(webp, { paths: { webp: 'cat/001.webp', txt: 'cat/001.txt' } });
    if (out === 'skip') throw new Error('skip');
    expect(text(out.members.cls)).toBe('0');
    expect(tag.stats?.()).toMatchObject({ tagged: 1, untagged: 0 });
    // two rows of one key with two labels: the table is refused (issue 26); with one label, either row is the row
    await writeFile(join(tmp(), 'twice.csv'), 'path,label\ncat/001.jpg,cat\ncat/001.png,dog\n');
    expect(() => parsePassSpec('tag=twice.csv', { cwd: tmp() })).toThrow(/give sample "cat\/001" two different rows/);
    await writeFile(join(tmp(), 'agree.csv'), 'path,label\ncat/001.jpg,cat\ncat/001.png,cat\ndog/001.png,dog\n');
    const agree = parsePassSpec('tag=agree.csv', { cwd: tmp() });
    const tagged = await agree.run(webp, { paths: { webp: 'cat/001.webp' } });
    if (tagged === 'skip') throw new Error('skip');
    expect(text(tagged.members.cls)).toBe('0');
  });

  it('matches by source path after a format pass renamed the member', async () => {
    const webp = await run(spec('format=webp'), 'cat/001');
    const out = await spec('tag=labels.csv').run(webp, { paths: fixture('cat/001').paths });
    if (out === 'skip') throw new Error('skip');
    expect(text(out.members.cls)).toBe('0');
  });

  it('CSV with integer labels keeps them; several columns give a json member of strings', async () => {
    await writeFile(join(tmp(), 'ints.csv'), 'key,cls\r\ncat/001,7\r\n./dog/003,12\r\n');
    const ints = parsePassSpec('tag=ints.csv', { cwd: tmp() });
    expect(text(member(await run(ints, 'cat/001'), 'cls'))).toBe('7');
    expect(text(member(await run(ints, 'dog/003'), 'cls'))).toBe('12');
    expect(ints.outputs?.()).toEqual({});

    await writeFile(join(tmp(), 'meta.csv'), 'path,caption,width\ncat/001.jpg,"a cat, small",64\n');
    const meta = parsePassSpec('tag=meta.csv', { cwd: tmp() });
    expect(JSON.parse(text(member(await run(meta, 'cat/001'), 'json')))).toEqual({ caption: 'a cat, small', width: '64' });
  });

  it('JSON object and array forms', async () => {
    await writeFile(join(tmp(), 'obj.json'), JSON.stringify({ 'cat/001': 'tabby', 'dog/003.webp': 'pug' }));
    const obj = parsePassSpec('tag=obj.json', { cwd: tmp() });
    expect(obj.outputs?.().manifest).toEqual({ classes: ['pug', 'tabby'] });
    expect(text(member(await run(obj, 'cat/001'), 'cls'))).toBe('1');

    await writeFile(join(tmp(), 'arr.json'), JSON.stringify([{ key: 'cat/001', bbox: [1, 2], ok: true }, { path: 'dog/003.webp', bbox: [3, 4] }]));
    const arr = parsePassSpec('tag=arr.json', { cwd: tmp() });
    expect(JSON.parse(text(member(await run(arr, 'cat/001'), 'json')))).toEqual({ bbox: [1, 2], ok: true });
    expect(JSON.parse(text(member(await run(arr, 'dog/003'), 'json')))).toEqual({ bbox: [3, 4] });
  });

  it.each([
    ['dup.csv', 'path,label\na,1\n./a,2\n', /"a" appears twice/],
    ['short.csv', 'path,label\na\n', /data row 1 has 1 fields, expected 2/],
    ['empty.csv', '', /the table is empty/],
    ['quote.csv', 'path,label\n"a,1\n', /never closed/],
    ['nolabel.csv', 'path,label\na,\n', /empty or non-text label/],
    ['both.json', '[{"key":"a","path":"a.jpg"}]', /exactly one of "key" and "path"/],
    ['bad.json', '{', /not valid JSON/],
    ['null.json', '{"a": null}', /expected an object of fields/],
    ['labels.txt', 'x', /Expected dirname, FILE.csv or FILE.json/],
    ['missing.csv', undefined, /Cannot read label table missing.csv \(ENOENT\)/],
  ])('%s is rejected', async (name, content, message) => {
    if (content !== undefined) await writeFile(join(tmp(), name), content);
    let error: unknown;
    try {
      parsePassSpec(`tag=${name}`, { cwd: tmp() });
    } catch (e) {
      error = e;
    }
    expect(isShardkitError(error, ErrorCodes.INVALID_ARG)).toBe(true);
    expect((error as Error).message).toMatch(message);
  });
});
