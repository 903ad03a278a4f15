/** extract writes members back at their paths, verified; never outside the target, never through a link. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { extractDataset, safeTarget } from '../../src/verify/extract.js';
import { probeNameFolding } from '../../src/verify/written-paths.js';
import { tmpDir } from '../helpers/tmp.js';

const enc = new TextEncoder();

async function dataset(compress: 'none' | 'lz4' = 'lz4'): Promise<string> {
  const dir = tmpDir();
  const w = new DatasetWriter({ dir, compress });
  w.add({ key: 'a/1', members: { jpg: enc.encode('one'.repeat(100)), 'seg.png': enc.encode('seg') } });
  w.add({ key: 'a/2', members: { txt: enc.encode('two') } });
  w.add({ key: 'b/3', members: { txt: enc.encode('three') } });
  await w.finish();
  return dir;
}

describe('extractDataset', () => {
  it('writes every member at key.ext, decompressed; --prefix selects', async () => {
    const ds = await dataset();
    const out = tmpDir();
    const r = await extractDataset(ds, out);
    expect(r).toEqual({ samples: 3, files: 4, bytes: 300 + 3 + 3 + 5 });
    expect(fs.readFileSync(path.join(out, 'a/1.jpg'), 'utf8')).toBe('one'.repeat(100));
    expect(fs.readFileSync(path.join(out, 'a/1.seg.png'), 'utf8')).toBe('seg');
    const some = tmpDir();
    expect((await extractDataset(ds, some, { prefix: 'b/' })).files).toBe(1);
    expect(fs.readdirSync(some)).toEqual(['b']);
  });

  it('never follows a symlink already in the target: not as a directory, not as a file', async () => {
    const ds = await dataset();
    const outside = tmpDir();
    const out = tmpDir();
    fs.symlinkSync(outside, path.join(out, 'a'));
    await expect(extractDataset(ds, out)).rejects.toMatchObject({ code: ErrorCodes.UNSAFE_PATH });
    expect(fs.readdirSync(outside)).toEqual([]);
    const out2 = tmpDir();
    fs.mkdirSync(path.join(out2, 'b'));
    const victim = path.join(outside, 'victim.txt');
    fs.writeFileSync(victim, 'keep');
    fs.symlinkSync(victim, path.join(out2, 'b', '3.txt'));
    await expect(extractDataset(ds, out2, { prefix: 'b/' })).rejects.toMatchObject({ code: ErrorCodes.UNSAFE_PATH });
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep');
  });

  it('replaces a hard-linked file instead of writing through it', async () => {
    const ds = await dataset();
    const outside = path.join(tmpDir(), 'linked.txt');
    fs.writeFileSync(outside, 'keep');
    const out = tmpDir();
    fs.mkdirSync(path.join(out, 'b'));
    fs.linkSync(outside, path.join(out, 'b', '3.txt'));
    await extractDataset(ds, out, { prefix: 'b/' });
    expect(fs.readFileSync(outside, 'utf8')).toBe('keep');
    expect(fs.readFileSync(path.join(out, 'b', '3.txt'), 'utf8')).toBe('three');
  });

  it('refuses paths that would land outside the target', () => {
    const root = '/tmp/x';
    for (const bad of ['../evil', 'a/../../evil', '/etc/passwd', 'a//b', './a', 'a\0b', '']) {
      expect(() => safeTarget(root, bad, bad)).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH }));
    }
    expect(safeTarget(root, 'a/b.jpg', 'a/b')).toBe('/tmp/x/a/b.jpg');
    // where "/" is the only separator, a backslash is a character of one name: these stay in the target
    expect(safeTarget(root, 'a\\..\\b', 'a\\..\\b')).toBe('/tmp/x/a\\..\\b');
    expect(safeTarget(root, 'k.x\\..\\..\\y', 'k')).toBe('/tmp/x/k.x\\..\\..\\y');
  });

  it('refuses a member whose path an earlier key already wrote (a + b.c, a.b + c), naming both keys', async () => {
    const ds = tmpDir();
    // the packed layout takes both keys (the tar layout refuses a key with a dot in its last segment)
    const w = new DatasetWriter({ dir: ds, layout: 'packed' });
    w.add({ key: 'a', members: { 'b.c': enc.encode('first') } });
    w.add({ key: 'a.b', members: { c: enc.encode('second'), d: enc.encode('other member') } });
    await w.finish();
    const out = tmpDir();
    await expect(extractDataset(ds, out)).rejects.toMatchObject({
      code: ErrorCodes.UNSAFE_PATH,
      key: 'a.b',
      message: 'refusing to extract "a.b.c" (key "a.b", ext "c"): key "a" (ext "b.c") already wrote that path',
    });
    // planned from the index before any write: nothing of the dataset was extracted
    expect(fs.readdirSync(out)).toEqual([]);
  });

  it('refuses a key whose file another key needs as a directory (a, a/b) before writing anything', async () => {
    const ds = tmpDir();
    const w = new DatasetWriter({ dir: ds });
    w.add({ key: 'a', members: { '': enc.encode('a file named a') } });
    w.add({ key: 'a/b', members: { txt: enc.encode('below a') } });
    w.add({ key: 'c', members: { txt: enc.encode('fine') } });
    await w.finish();
    const out = path.join(tmpDir(), 'new');
    await expect(extractDataset(ds, out)).rejects.toMatchObject({
      code: ErrorCodes.UNSAFE_PATH,
      key: 'a/b',
      message: 'refusing to extract "a/b.txt" (key "a/b", ext "txt"): it needs "a" as a directory, and key "a" writes a file there',
    });
    // the target it made is gone again; one that was there stays, empty
    expect(fs.existsSync(out)).toBe(false);
    const there = tmpDir();
    await expect(extractDataset(ds, there)).rejects.toMatchObject({ code: ErrorCodes.UNSAFE_PATH });
    expect(fs.readdirSync(there)).toEqual([]);
  });

  it('extracts paths that differ only in case as two files where the file system keeps them apart', async () => {
    // Linux file systems here: case-sensitive; on a folding one (macOS, a Windows volume) WrittenPaths refuses them
    const ds = tmpDir();
    const w = new DatasetWriter({ dir: ds });
    w.add({ key: 'Dir/A', members: { txt: enc.encode('upper') } });
    w.add({ key: 'dir/a', members: { txt: enc.encode('lower') } });
    await w.finish();
    const out = tmpDir();
    expect(probeNameFolding(out)).toEqual({ caseInsensitive: false, normalizationInsensitive: false });
    expect(fs.readdirSync(out)).toEqual([]); // the probe is gone
    await extractDataset(ds, out);
    expect(fs.readFileSync(path.join(out, 'Dir/A.txt'), 'utf8')).toBe('upper');
    expect(fs.readFileSync(path.join(out, 'dir/a.txt'), 'utf8')).toBe('lower');
  });

  it('refuses a target that is the dataset, inside it or around it (INVALID_ARG), also through a symlink', async () => {
    const parent = tmpDir();
    const ds = path.join(parent, 'ds');
    const w = new DatasetWriter({ dir: ds });
    w.add({ key: 'ds/manifest', members: { json: enc.encode('{"not":"a manifest"}') } });
    w.add({ key: 'manifest', members: { json: enc.encode('{"not":"a manifest"}') } });
    await w.finish();
    const manifest = fs.readFileSync(path.join(ds, 'manifest.json'));
    const link = path.join(tmpDir(), 'link');
    fs.symlinkSync(ds, link);
    for (const target of [ds, `${ds}/`, path.join(ds, 'sub'), parent, link, path.join(link, 'sub')]) {
      await expect(extractDataset(ds, target), target).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/the dataset directory/) });
      await expect(extractDataset(`file://${ds}`, target), target).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
    }
    expect(fs.readFileSync(path.join(ds, 'manifest.json'))).toEqual(manifest);
    expect(fs.existsSync(path.join(ds, 'sub'))).toBe(false);
    // a dataset in a directory named ..x is inside its parent all the same
    const dotted = path.join(tmpDir(), '..x');
    fs.cpSync(ds, dotted, { recursive: true });
    await expect(extractDataset(dotted, path.dirname(dotted))).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
    // a sibling directory is fine
    expect((await extractDataset(ds, path.join(parent, 'out'))).files).toBe(2);
  });

  it('opens the dataset before it creates the target: a failed open leaves no directory behind', async () => {
    const target = path.join(tmpDir(), 'new', 'dir');
    await expect(extractDataset(tmpDir(), target)).rejects.toMatchObject({ code: ErrorCodes.NOT_A_DATASET });
    expect(fs.existsSync(path.dirname(target))).toBe(false);
    // and a target that cannot be created is IO naming it
    const file = path.join(tmpDir(), 'file');
    fs.writeFileSync(file, 'x');
    await expect(extractDataset(await dataset(), path.join(file, 'dir'))).rejects.toMatchObject({ code: ErrorCodes.IO, file: path.join(file, 'dir') });
  });
});
