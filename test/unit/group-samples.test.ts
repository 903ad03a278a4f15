import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import { splitKey } from '../../formats/sample.js';
import { groupSamples, RunGrouper, walkSamples } from '../../src/pack/group-samples.js';
import { samplesOfTask } from '../../src/pack/source-batches.js';
import { sourceTasks } from '../../src/pack/source-tasks.js';
import { walkSource, type WalkEntry } from '../../src/pack/walk.js';
import { collect, makeTempDir, removeTree, writeTree } from '../helpers/source-tree.js';

let root: string;
beforeEach(async () => {
  root = await makeTempDir('shardkit-group-');
});
afterEach(async () => {
  await removeTree(root);
});

function entries(...relPaths: string[]): AsyncIterable<WalkEntry> {
  return (async function* () {
    for (const relPath of relPaths) yield { relPath, absPath: `/x/${relPath}`, size: 1, mtimeMs: 0 };
  })();
}

describe('groupSamples', () => {
  it('groups consecutive members of one key', async () => {
    const samples = await collect(groupSamples(entries('a/b.cls', 'a/b.jpg', 'a/b.seg.png', 'a/c.jpg')));
    expect(samples.map((s) => [s.key, s.exts, s.files.map((f) => f.relPath)])).toEqual([
      ['a/b', ['cls', 'jpg', 'seg.png'], ['a/b.cls', 'a/b.jpg', 'a/b.seg.png']],
      ['a/c', ['jpg'], ['a/c.jpg']],
    ]);
  });

  it('keeps non-adjacent keys of path order together when walked in sample order', async () => {
    // By path, 'a-2.jpg' splits 'a' from 'a.cls', and the directory 'a.k/' splits 'a.jpg' from 'a.png'.
    await writeTree(root, { a: '', 'a-2.jpg': '', 'a.cls': '', 'a.jpg': '', 'a.k/z.txt': '', 'a.png': '', 'b/.x': '' });
    const samples = await collect(walkSamples(root));
    expect(samples.map((s) => [s.key, s.exts])).toEqual([
      ['a', ['', 'cls', 'jpg', 'png']],
      ['a-2', ['jpg']],
      ['a.k/z', ['txt']],
    ]);
    // In path order the same tree cannot be grouped without unbounded buffering: it is refused, not mis-grouped.
    await expect(collect(groupSamples(walkSource(root, { order: 'path' })))).rejects.toSatisfy((e) =>
      isShardkitError(e, ErrorCodes.DUPLICATE_KEY),
    );
  });

  it('rejects a repeated member', async () => {
    await expect(collect(groupSamples(entries('a.jpg', 'a.jpg')))).rejects.toSatisfy(
      (e) => isShardkitError(e, ErrorCodes.DUPLICATE_KEY) && e.message.includes('a.jpg'),
    );
  });

  it("rejects a name whose first dot ends it, or that starts with '.', in pack's grouping of runs too", () => {
    const run = { absDir: '/x', relDir: 'd', names: ['a.', 'b.jpg'] };
    expect(() => new RunGrouper().group(run)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INPUT, file: '/x/a.', message: 'Source file d/a. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)' }),
    );
    expect(() => new RunGrouper().group({ ...run, names: ['.b.jpg'] })).toThrow(
      expect.objectContaining({ code: ErrorCodes.INPUT, file: '/x/.b.jpg', message: "Source file d/.b.jpg has no WebDataset key: its name starts with '.'" }),
    );
    expect(() => new RunGrouper().group({ ...run, names: ['b.jpg', 'a.jpg'] })).toThrow(expect.objectContaining({ code: ErrorCodes.DUPLICATE_KEY }));
  });

  it("rejects a name whose first dot ends it ('a.' would come back as 'a'), or that starts with '.' (no key)", async () => {
    await expect(collect(groupSamples(entries('d/a.')))).rejects.toSatisfy(
      (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message === 'Source file d/a. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)',
    );
    await expect(collect(groupSamples(entries('.gitignore')))).rejects.toSatisfy(
      (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message === "Source file .gitignore has no WebDataset key: its name starts with '.'",
    );
    // a hidden directory's files have keys
    expect((await collect(groupSamples(entries('.cache/x.jpg', '.cache/x.txt')))).map((s) => [s.key, s.exts])).toEqual([['.cache/x', ['jpg', 'txt']]]);
  });

  it('rejects a key that comes back after another key', async () => {
    await expect(collect(groupSamples(entries('a.jpg', 'b.jpg', 'a.png')))).rejects.toSatisfy(
      (e) => isShardkitError(e, ErrorCodes.DUPLICATE_KEY) && e.message.includes('a.png'),
    );
  });

  it('yields each file once, samples in strictly ascending key order, on random trees', async () => {
    const char = fc.constantFrom('a', 'b', '-', '.', '!', '0');
    const name = fc
      .array(char, { minLength: 1, maxLength: 4 })
      .map((cs) => cs.join(''))
      .filter((n) => n !== '.' && n !== '..' && !n.startsWith('.'));
    const path = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
    // Names like 'a.' are refused (tested above), so leave them out here.
    const storable = (p: string): boolean => {
      const base = p.slice(p.lastIndexOf('/') + 1);
      return base.indexOf('.') !== base.length - 1;
    };
    const tree = fc
      .uniqueArray(path.filter(storable), { minLength: 1, maxLength: 25 })
      .map((paths) => paths.filter((p) => !paths.some((q) => q.startsWith(`${p}/`))));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(tree, async (paths) => {
        const dir = join(root, `t${run++}`);
        await writeTree(dir, Object.fromEntries(paths.map((p) => [p, ''])));
        const samples = await collect(walkSamples(dir));
        // pack's grouping of the walk's runs by name: the same samples
        const grouper = new RunGrouper();
        const byRuns: [string, string[]][] = [];
        for (const r of await collect(walkSource(dir, { order: 'sample' }).runs())) {
          const g = grouper.group(r);
          let m = 0;
          g.keys.forEach((key, i) => {
            byRuns.push([key, g.exts.slice(m, m + (g.counts[i] as number))]);
            m += g.counts[i] as number;
          });
        }
        expect(byRuns).toEqual(samples.map((s) => [s.key, s.exts]));
        // and the reader threads' tasks name the files the walk found
        const tasks = await collect(sourceTasks({ root: dir, followSymlinks: false, includeHidden: false, skip: 0 }, () => undefined));
        const files = tasks.flatMap(samplesOfTask);
        expect(files.map((f) => [f.key, f.exts, f.paths])).toEqual(samples.map((s) => [s.key, s.exts, s.files.map((e) => e.absPath)]));
        const keys = samples.map((s) => s.key);
        for (let i = 1; i < keys.length; i++) expect(compareKeys(keys[i - 1] as string, keys[i] as string)).toBeLessThan(0);
        // Reference: group all paths by key with a map.
        const expected = new Map<string, string[]>();
        for (const p of paths) {
          const { key } = splitKey(p);
          expected.set(key, [...(expected.get(key) ?? []), p]);
        }
        expect(samples.length).toBe(expected.size);
        for (const s of samples) {
          expect(s.files.map((f) => f.relPath).sort()).toEqual((expected.get(s.key) ?? []).sort());
          expect(s.exts).toEqual(s.files.map((f) => splitKey(f.relPath).ext));
          expect([...s.exts].sort(compareKeys)).toEqual(s.exts);
        }
        await removeTree(dir);
      }),
      { numRuns: 40 },
    );
  });
});
