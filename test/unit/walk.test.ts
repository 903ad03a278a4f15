import { execFileSync } from 'node:child_process';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import { noKeyReason, splitKey } from '../../formats/sample.js';
import { nativeAvailable } from '../../src/native/native.js';
import { runAbsPath, runRelPath, walkSource, type WalkOptions } from '../../src/pack/walk.js';
import { collect, makeTempDir, removeTree, writeTree } from '../helpers/source-tree.js';

let root: string;
beforeEach(async () => {
  root = await makeTempDir('shardkit-walk-');
});
afterEach(async () => {
  await chmod(join(root, 'locked'), 0o755).catch(() => undefined);
  await removeTree(root);
});

async function relPaths(options: WalkOptions = {}, dir = root): Promise<string[]> {
  return (await collect(walkSource(dir, options))).map((e) => e.relPath);
}

function byKeyThenExt(a: string, b: string): number {
  const x = splitKey(a);
  const y = splitKey(b);
  return compareKeys(x.key, y.key) || compareKeys(x.ext, y.ext) || compareKeys(a, b);
}

// Every case runs twice: listings from the native addon (read and sorted in C) and from fs.readdir (sorted here).
const modes = nativeAvailable() ? ['native listing', 'fs.readdir'] : ['fs.readdir'];
describe.each(modes)('walkSource with %s', (mode) => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.SHARDKIT_NATIVE;
    if (mode === 'fs.readdir') process.env.SHARDKIT_NATIVE = '0';
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.SHARDKIT_NATIVE;
    else process.env.SHARDKIT_NATIVE = saved;
  });

  describe('walkSource order', () => {
    it("sorts full paths, not names per directory: 'a-b/x' before 'a/x' by path", async () => {
      await writeTree(root, { 'a/x': '1', 'a-b/x': '2', 'a.b': '3', ab: '4', 'a/y/z': '5' });
      expect(await relPaths({ order: 'path' })).toEqual(['a-b/x', 'a.b', 'a/x', 'a/y/z', 'ab']);
    });

    it('sample order puts each key together and keys ascending', async () => {
      await writeTree(root, { 'a.jpg': '', 'a.png': '', 'a.k/z.txt': '', 'a-2.jpg': '', a: '', 'a.cls': '' });
      expect(await relPaths({ order: 'path' })).toEqual(['a', 'a-2.jpg', 'a.cls', 'a.jpg', 'a.k/z.txt', 'a.png']);
      expect(await relPaths()).toEqual(['a', 'a.cls', 'a.jpg', 'a.png', 'a-2.jpg', 'a.k/z.txt']);
    });

    it('orders by UTF-8 bytes: astral characters after U+E000-U+FFFF', async () => {
      await writeTree(root, { '\u{1F600}.txt': '', '\uE000.txt': '', 'z.txt': '', 'é.txt': '' });
      expect(await relPaths({ order: 'path' })).toEqual(['z.txt', 'é.txt', '\uE000.txt', '\u{1F600}.txt']);
    });

    it('matches a plain byte sort of all paths on random trees (both orders)', async () => {
      // Characters around '/' (0x2f) and '.' (0x2e), plus non-ASCII on both sides of the surrogate range.
      const char = fc.constantFrom('a', 'b', '-', '.', '!', ' ', '0', 'é', '\uE000', '\u{1F600}');
      const name = fc
        .array(char, { minLength: 1, maxLength: 4 })
        .map((cs) => cs.join(''))
        .filter((n) => n !== '.' && n !== '..');
      const path = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
      // No path may also be a directory of another path.
      const tree = fc
        .uniqueArray(path, { minLength: 1, maxLength: 25 })
        .map((paths) => paths.filter((p) => !paths.some((q) => q.startsWith(`${p}/`))));
      let run = 0;
      await fc.assert(
        fc.asyncProperty(tree, async (paths) => {
          const dir = join(root, `t${run++}`);
          await writeTree(dir, Object.fromEntries(paths.map((p) => [p, p])));
          // a file name that gives no key ('.a', 'a.') is left out with badNames skip, and told with its path
          const keyed = paths.filter((p) => noKeyReason(p.slice(p.lastIndexOf('/') + 1)) === undefined);
          const noKey = paths.filter((p) => !keyed.includes(p));
          for (const order of ['path', 'sample'] as const) {
            const skipped: string[] = [];
            const walked = await relPaths({ order, includeHidden: true, badNames: 'skip', onSkip: (p, why) => skipped.push(`${p}:${why}`) }, dir);
            expect(walked).toEqual([...keyed].sort(order === 'path' ? compareKeys : byKeyThenExt));
            expect(skipped.sort()).toEqual(noKey.map((p) => `${p}:no-key`).sort());
          }
          await removeTree(dir);
        }),
        { numRuns: 40 },
      );
    });
  });

  describe('walkSource entries and stats', () => {
    it('reports size, mtime, absolute path and totals', async () => {
      await writeTree(root, { 'cat/1.jpg': 'abc', 'dog/2.jpg': 'hello' });
      const walk = walkSource(root);
      const entries = await collect(walk);
      expect(entries.map((e) => [e.relPath, e.size, e.absPath])).toEqual([
        ['cat/1.jpg', 3, join(root, 'cat/1.jpg')],
        ['dog/2.jpg', 5, join(root, 'dog/2.jpg')],
      ]);
      expect(entries[0]?.mtimeMs).toBeGreaterThan(0);
      expect(walk.stats).toMatchObject({ files: 2, bytes: 8, directories: 3 });
      // A second iteration starts the counters again.
      await collect(walk);
      expect(walk.stats.files).toBe(2);
    });

    it('skips and counts hidden files and directories unless includeHidden', async () => {
      await writeTree(root, { '.git/config': '', '.git/objects/x': '', 'a/.DS_Store': '', 'a/b.jpg': '' });
      const skipped: string[] = [];
      const walk = walkSource(root, { onSkip: (p, why) => skipped.push(`${p}:${why}`) });
      expect(await collect(walk).then((es) => es.map((e) => e.relPath))).toEqual(['a/b.jpg']);
      expect(walk.stats.skippedHidden).toBe(2);
      expect(skipped.sort()).toEqual(['.git:hidden', 'a/.DS_Store:hidden']);
      expect(await relPaths({ includeHidden: true, exclude: ['.DS_Store'] })).toEqual(['.git/config', '.git/objects/x', 'a/b.jpg']);
    });

    it("with includeHidden, walks hidden directories (their files have keys), but a hidden file has no key: it stops the walk, or with badNames skip is left out and told", async () => {
      await writeTree(root, { '.cache/x.jpg': '1', '.cache/.y.jpg': '2', 'a/.DS_Store': '3', 'a/b.jpg': '4', '.gitignore': '7', 'e/.z': '8' });
      for (const order of ['path', 'sample'] as const) {
        await expect(collect(walkSource(root, { order, includeHidden: true }))).rejects.toSatisfy(
          (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message === "Source file .gitignore has no WebDataset key: its name starts with '.'" && e.file === join(root, '.gitignore'),
        );
        const skipped: [string, string, string | undefined][] = [];
        const walk = walkSource(root, { order, includeHidden: true, badNames: 'skip', exclude: ['e/.z'], onSkip: (p, why, err) => skipped.push([p, why, err?.message]) });
        expect((await collect(walk)).map((e) => e.relPath)).toEqual(['.cache/x.jpg', 'a/b.jpg']);
        expect(skipped.sort()).toEqual([
          ['.cache/.y.jpg', 'no-key', "Source file .cache/.y.jpg has no WebDataset key: its name starts with '.'"],
          ['.gitignore', 'no-key', "Source file .gitignore has no WebDataset key: its name starts with '.'"],
          ['a/.DS_Store', 'no-key', "Source file a/.DS_Store has no WebDataset key: its name starts with '.'"],
          // the filters come first: an excluded name is left out for that
          ['e/.z', 'excluded', undefined],
        ]);
        expect(walk.stats).toMatchObject({ files: 2, skippedBadNames: 3, skippedExcluded: 1, skippedHidden: 0 });
      }
      // without includeHidden they are hidden names, skipped and counted as before, and stop nothing
      const walk = walkSource(root);
      expect((await collect(walk)).map((e) => e.relPath)).toEqual(['a/b.jpg']);
      expect(walk.stats).toMatchObject({ skippedBadNames: 0, skippedHidden: 4 });
    });

    it("a file name that ends with its first dot has no key: it stops the walk, or with badNames skip is left out and told", async () => {
      await writeTree(root, { 'a/b.jpg': '4', 'a/q.': '5', 'a/r.s.': '6', 'e/t.': '8' });
      for (const order of ['path', 'sample'] as const) {
        await expect(collect(walkSource(root, { order }))).rejects.toSatisfy(
          (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message === 'Source file a/q. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)' && e.file === join(root, 'a/q.'),
        );
        const skipped: [string, string, string | undefined][] = [];
        const walk = walkSource(root, { order, badNames: 'skip', exclude: ['e/t.'], onSkip: (p, why, err) => skipped.push([p, why, err?.message]) });
        expect((await collect(walk)).map((e) => e.relPath)).toEqual(['a/b.jpg', 'a/r.s.']);
        expect(skipped.sort()).toEqual([
          ['a/q.', 'no-key', 'Source file a/q. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)'],
          // the filters come first: an excluded name is left out for that
          ['e/t.', 'excluded', undefined],
        ]);
        expect(walk.stats).toMatchObject({ files: 2, skippedBadNames: 1, skippedExcluded: 1 });
      }
    });

    it('skips and counts symlinks unless followSymlinks', async () => {
      await writeTree(root, { 'real/a.txt': 'aaaa' });
      await symlink(join(root, 'real/a.txt'), join(root, 'link.txt'));
      await symlink(join(root, 'real'), join(root, 'linkdir'));
      await symlink(join(root, 'missing'), join(root, 'dangling'));
      const walk = walkSource(root);
      expect(await collect(walk).then((es) => es.map((e) => e.relPath))).toEqual(['real/a.txt']);
      expect(walk.stats.skippedSymlinks).toBe(3);

      const following = walkSource(root, { followSymlinks: true });
      const entries = await collect(following);
      expect(entries.map((e) => [e.relPath, e.size])).toEqual([
        ['link.txt', 4],
        ['linkdir/a.txt', 4],
        ['real/a.txt', 4],
      ]);
      expect(following.stats.skippedSymlinks).toBe(1); // the dangling one
    });

    it('cuts symlink loops when following', async () => {
      await writeTree(root, { 'a/file.txt': 'x' });
      await symlink(root, join(root, 'a/up')); // a/up -> root: a loop
      await symlink('.', join(root, 'self'));
      const walk = walkSource(root, { followSymlinks: true });
      const paths = (await collect(walk)).map((e) => e.relPath);
      expect(paths).toEqual(['a/file.txt']);
      expect(walk.stats.skippedCycles).toBe(2);
    });

    it('skips and counts FIFOs as other', async () => {
      await writeTree(root, { 'a.txt': '' });
      execFileSync('mkfifo', [join(root, 'pipe')]);
      const walk = walkSource(root);
      expect((await collect(walk)).map((e) => e.relPath)).toEqual(['a.txt']);
      expect(walk.stats.skippedOther).toBe(1);
    });

    it('applies include and exclude globs to relative paths', async () => {
      await writeTree(root, {
        'cat/1.jpg': '',
        'cat/1.txt': '',
        'dog/2.jpg': '',
        'dog/tmp/3.jpg': '',
        'tmp/4.jpg': '',
        'x.png': '',
      });
      expect(await relPaths({ include: ['*.jpg'] })).toEqual(['cat/1.jpg', 'dog/2.jpg', 'dog/tmp/3.jpg', 'tmp/4.jpg']);
      expect(await relPaths({ include: ['cat/*'] })).toEqual(['cat/1.jpg', 'cat/1.txt']);
      const walk = walkSource(root, { exclude: ['tmp', '*.txt'] });
      expect(await collect(walk).then((es) => es.map((e) => e.relPath))).toEqual(['cat/1.jpg', 'dog/2.jpg', 'x.png']);
      // Two pruned tmp directories and one .txt file.
      expect(walk.stats.skippedExcluded).toBe(3);
      expect(await relPaths({ include: ['**/*.jpg'], exclude: ['dog/**'] })).toEqual(['cat/1.jpg', 'tmp/4.jpg']);
    });

    it('rejects empty glob patterns', () => {
      expect(() => walkSource(root, { include: [''] })).toThrow(/Expected non-empty glob/);
    });
  });

  describe('walkSource errors', () => {
    it('names a missing root', async () => {
      const missing = join(root, 'nope');
      await expect(collect(walkSource(missing))).rejects.toSatisfy(
        (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message.includes(missing) && e.message.includes('ENOENT'),
      );
    });

    it('rejects a root that is a file', async () => {
      await writeTree(root, { f: '' });
      await expect(collect(walkSource(join(root, 'f')))).rejects.toSatisfy((e) => isShardkitError(e, ErrorCodes.INPUT));
    });

    it('names an unreadable directory', async () => {
      await writeTree(root, { 'locked/a.txt': '' });
      await chmod(join(root, 'locked'), 0o000);
      await chmod(root, 0o755);
      // root reads anything: walk with the effective uid of nobody (this worker is its own process)
      const asRoot = process.getuid?.() === 0;
      if (asRoot) process.seteuid?.(65534);
      try {
        await expect(collect(walkSource(root))).rejects.toSatisfy(
          (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message.includes(join(root, 'locked')),
        );
      } finally {
        if (asRoot) process.seteuid?.(0);
      }
    });

    it('rejects file names that are not UTF-8', async () => {
      await mkdir(join(root, 'd'));
      await writeFile(Buffer.concat([Buffer.from(`${root}/d/`), Buffer.from([0xff, 0x2e, 0x6a])]), 'x');
      await expect(collect(walkSource(root))).rejects.toSatisfy(
        (e) => isShardkitError(e, ErrorCodes.INPUT) && e.message.includes('ff2e6a') && e.message.includes('d'),
      );
    });

    it('with badNames skip, leaves out names that are not UTF-8 (a directory with all below it) and names them escaped', async () => {
      await mkdir(join(root, 'd'));
      const raw = (rel: number[]): Buffer => Buffer.concat([Buffer.from(`${root}/d/`), Buffer.from(rel)]);
      await writeFile(raw([0x61, 0xff, 0x2e, 0x6a]), 'x'); // a\xff.j
      await writeFile(raw([0xc3, 0xa9, 0xc3, 0x2e, 0x6a]), 'x'); // é then a lone lead byte
      await mkdir(raw([0x78, 0xe2, 0x82]));
      await writeFile(Buffer.concat([raw([0x78, 0xe2, 0x82]), Buffer.from('/inside.bin')]), 'x');
      await writeFile(join(root, 'd', 'ok.bin'), 'y');
      const skipped: [string, string][] = [];
      const walk = walkSource(root, { badNames: 'skip', onSkip: (p, why) => skipped.push([p, why]) });
      expect((await collect(walk)).map((e) => e.relPath)).toEqual(['d/ok.bin']);
      expect(skipped).toEqual([
        ['d/a\\xff.j', 'not-utf8'],
        ['d/x\\xe2\\x82', 'not-utf8'],
        ['d/\u00e9\\xc3.j', 'not-utf8'],
      ]);
      expect(walk.stats.skippedBadNames).toBe(3);
      await expect(collect(walkSource(root, { badNames: 'fail' }))).rejects.toSatisfy((e) => isShardkitError(e, ErrorCodes.INPUT));
    });

    it("applies its filters to names that are not UTF-8 first: hidden, linked or excluded ones are left out for that, and stop nothing", async () => {
      await mkdir(join(root, 'd'));
      const raw = (rel: number[]): Buffer => Buffer.concat([Buffer.from(`${root}/d/`), Buffer.from(rel)]);
      await writeFile(raw([0x2e, 0x68, 0xff]), 'x'); // .h\xff
      await writeFile(raw([0x6a, 0xff, 0x2e, 0x74, 0x6d, 0x70]), 'x'); // j\xff.tmp
      await symlink(join(root, 'd', 'ok.bin'), raw([0x6c, 0xff]));
      await writeFile(join(root, 'd', 'ok.bin'), 'y');
      for (const badNames of ['fail', 'skip'] as const) {
        const skipped: [string, string][] = [];
        const walk = walkSource(root, { badNames, exclude: ['*.tmp'], onSkip: (p, why) => skipped.push([p, why]) });
        expect((await collect(walk)).map((e) => e.relPath)).toEqual(['d/ok.bin']);
        expect(skipped.sort()).toEqual([
          ['d/.h\\xff', 'hidden'],
          ['d/j\\xff.tmp', 'excluded'],
          ['d/l\\xff', 'symlink'],
        ]);
      }
    });

    it('takes a UTF-8 name that holds U+FFFD itself (the character Node puts where bytes are not UTF-8)', async () => {
      await mkdir(join(root, 'd'));
      await writeFile(join(root, 'd', 'a\uFFFD.bin'), 'x');
      await writeFile(join(root, 'd', 'b.bin'), 'y');
      expect((await collect(walkSource(root))).map((e) => e.relPath)).toEqual(['d/a\uFFFD.bin', 'd/b.bin']);
    });
  });

  describe('walkSource runs', () => {
    it('sorts a followed link to a directory as a directory', async () => {
      // as a file, the link 'a' sorts first (key 'a', no extension); as the directory 'a/' it sorts after a.jpg
      await writeTree(root, { 'a.jpg': '', 'real/x.txt': '' });
      await symlink(join(root, 'real'), join(root, 'a'));
      expect(await relPaths({ followSymlinks: true })).toEqual(['a.jpg', 'a/x.txt', 'real/x.txt']);
      expect(await relPaths({ followSymlinks: true, order: 'path' })).toEqual(['a.jpg', 'a/x.txt', 'real/x.txt']);
    });

    it('gives the files by directory run, between subdirectories, with the entries\' paths', async () => {
      await writeTree(root, { 'a.jpg': '', 'a.txt': '', 'b/c.txt': '', 'c.bin': '', 'd/e/f.bin': '' });
      const runs = await collect(walkSource(root).runs());
      expect(runs.map((r) => [r.relDir, r.names])).toEqual([
        ['', ['a.jpg', 'a.txt']],
        ['b', ['c.txt']],
        ['', ['c.bin']],
        ['d/e', ['f.bin']],
      ]);
      const fromRuns = runs.flatMap((r) => r.names.map((n) => [runRelPath(r, n), runAbsPath(r, n)]));
      expect(fromRuns).toEqual((await collect(walkSource(root))).map((e) => [e.relPath, e.absPath]));
    });
  });

  it('lists a directory of hundreds of long names as a plain byte sort does (past the first buffers of the C lister)', async () => {
    // names of 1-200 bytes, some with dots and non-ASCII, and subdirectories among them
    const files: Record<string, string> = {};
    for (let i = 0; i < 800; i++) {
      const stem = `${'xyzé'.repeat(i % 40)}${i.toString(36)}`;
      files[i % 7 === 0 ? `${stem}/in.bin` : `${stem}${i % 3 === 0 ? '' : `.${'e'.repeat(i % 5)}t${i % 11}`}`] = '';
    }
    await writeTree(root, files);
    const paths = Object.keys(files);
    expect(await relPaths({ order: 'path' })).toEqual([...paths].sort(compareKeys));
    expect(await relPaths()).toEqual([...paths].sort(byKeyThenExt));
  });
});
