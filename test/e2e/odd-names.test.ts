/**
 * Names that decoders and splitters get wrong: a key that starts with U+FEFF (a byte order mark, which the default
 * UTF-8 TextDecoder silently drops), and a tar member whose basename ends in its first dot (`q.`: key `q`, empty
 * extension, which would name the file `q`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { readTree, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const BOM = '\uFEFF';
const byUtf8 = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
const manifestOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));

/**
 * Packs `src` as `n` parts with `flags` and merges them: each skipped input is listed by one part only, and the
 * merged manifest lists them all, as the one-machine pack's `skipped` does.
 */
function expectPartsListSkipsOnce(src: string, root: string, n: number, flags: string[], skipped: { path: string; reason: string }[]): void {
  const parts = Array.from({ length: n }, (_, i) => path.join(root, `part${i}`));
  parts.forEach((p, i) => expect(shardkit(['pack', src, '--out', p, '--part', `${i}/${n}`, ...flags]).status).toBe(0));
  expect(parts.flatMap((p) => manifestOf(p).skipped.map((s: { path: string }) => s.path)).sort()).toEqual(skipped.map((s) => s.path).sort());
  const merged = path.join(root, 'merged');
  expect(shardkit(['merge', ...parts, '--out', merged]).status).toBe(0);
  expect(manifestOf(merged).skipped).toEqual(skipped);
}

describe('a key that starts with U+FEFF', () => {
  it('round-trips through the index: listed, found and ordered as written', async () => {
    const dir = path.join(tmpDir(), 'ds');
    const keys = [`${BOM}only`, 'b', `${BOM}a`, `z/${BOM}inner`].sort(byUtf8);
    const w = new DatasetWriter({ dir, shardBytes: 64 * 1024 });
    for (const key of keys) w.add({ key, members: { txt: Buffer.from(key) } });
    await w.finish();
    const ds = await openDataset(dir);
    const listed: string[] = [];
    for await (const key of ds.keys()) listed.push(key);
    expect(listed).toEqual(keys);
    for (const [i, key] of keys.entries()) {
      expect(ds.atSync(i).key).toBe(key);
      expect(Buffer.from((await ds.get(key)).members.txt as Uint8Array).toString()).toBe(key);
    }
    expect(await ds.has('only')).toBe(false);
    await ds.close();
  });

  it('survives pack (the walk) and index (a GNU tar), and verify passes', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, `${BOM}a.txt`), 'bom');
    fs.writeFileSync(path.join(src, 'b.txt'), 'plain');
    const packed = path.join(root, 'packed');
    expect(shardkit(['pack', src, '--out', packed, '--quiet']).status).toBe(0);
    const tar = path.join(root, 'in.tar');
    execFileSync('tar', ['--format=gnu', '-C', src, '-cf', tar, `${BOM}a.txt`, 'b.txt']);
    const adopted = path.join(root, 'adopted');
    const indexed = shardkit(['index', tar, '--out', adopted]);
    expect(indexed.status, indexed.stderr).toBe(0);
    for (const ds of [packed, adopted]) {
      expect(shardkit(['ls', ds]).stdout).toBe(`b\n${BOM}a\n`);
      expect(shardkit(['get', ds, `${BOM}a`]).stdout).toBe('bom');
      const verified = shardkit(['verify', ds]);
      expect(verified.status, verified.stdout).toBe(0);
    }
  });
});

describe('a tar member whose name ends in its first dot', () => {
  it('is skipped with a reason by index, as pack refuses it, and the dataset verifies', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    fs.mkdirSync(path.join(src, 'd'), { recursive: true });
    fs.writeFileSync(path.join(src, 'd', 'q.'), 'data');
    fs.writeFileSync(path.join(src, 'd', 'r.txt'), 'x');
    const tar = path.join(root, 'in.tar');
    execFileSync('tar', ['--format=posix', '-C', src, '-cf', tar, 'd']);
    const out = path.join(root, 'ds');
    const r = shardkit(['index', tar, '--out', out, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(shardkit(['ls', out]).stdout).toBe('d/r\n');
    expect(JSON.stringify(JSON.parse(r.stdout))).toContain('extension would be empty');
    expect(shardkit(['verify', out]).status).toBe(0);
  });
});

describe('GNU sparse files in tars to index', () => {
  it('are skipped with a reason in every GNU format, and the members after them are found', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    fs.mkdirSync(src);
    // ten data runs with holes between them: the old GNU header's map (4 entries) continues in extension blocks
    const fd = fs.openSync(path.join(src, 's.bin'), 'w');
    for (let i = 0; i < 10; i++) fs.writeSync(fd, Buffer.alloc(100, 0x58), 0, 100, i * 65536);
    fs.ftruncateSync(fd, 10 * 65536 + 4096);
    fs.closeSync(fd);
    fs.writeFileSync(path.join(src, 't.txt'), 'after sparse');
    for (const format of [['--format=gnu'], ['--format=posix', '--sparse-version=0.0'], ['--format=posix', '--sparse-version=0.1'], ['--format=posix', '--sparse-version=1.0']]) {
      const tar = path.join(root, `${format.join('')}.tar`);
      execFileSync('tar', [...format, '-S', '-C', src, '-cf', tar, 's.bin', 't.txt']);
      const out = path.join(root, `ds${format.join('')}`);
      const r = shardkit(['index', tar, '--out', out, '--json']);
      expect(r.status, r.stderr).toBe(0);
      expect([format, shardkit(['ls', out]).stdout]).toEqual([format, 't\n']);
      expect(JSON.stringify(JSON.parse(r.stdout))).toContain('GNU sparse file');
      expect(shardkit(['get', out, 't']).stdout).toBe('after sparse');
    }
  });
});

describe('a file name that is not UTF-8', () => {
  it('stops the pack, or with --on-error skip is listed as skipped in key order, in one-machine and merged packs', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    fs.mkdirSync(src);
    const raw = (...parts: (string | number[])[]): Buffer => Buffer.concat([Buffer.from(`${src}/`), ...parts.map((p) => Buffer.from(p as string))]);
    for (const name of ['a.txt', 'c.txt', 'e.txt', 'f.txt']) fs.writeFileSync(path.join(src, name), name);
    fs.writeFileSync(raw('b', [0xff], '.txt'), 'bad name');
    fs.mkdirSync(raw('d', [0xfe]));
    fs.writeFileSync(Buffer.concat([raw('d', [0xfe]), Buffer.from('/x.txt')]), 'below a bad name');
    const mod = path.join(root, 'fail-c.mjs');
    fs.writeFileSync(mod, "export default (s) => { if (s.key === 'c') throw new Error('no c'); return s; };\n");

    const failed = shardkit(['pack', src, '--out', path.join(root, 'failed')]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT: A file name in the source root is not valid UTF-8 \(bytes 62ff2e747874\)/);

    const one = path.join(root, 'one');
    const r = shardkit(['pack', src, '--out', one, '--pass-module', mod, '--on-error', 'skip']);
    expect(r.status, r.stderr).toBe(0);
    const [line, ...listed] = r.stdout.split('\n').slice(0, -1);
    expect(line).toMatch(/packed 3 samples .*; 3 skipped \(listed below and in the manifest\)/);
    // one line per skip, path and reason, in key order; the summary names bad bytes as the manifest does
    expect(listed.map((l) => l.replace(/: SHARDKIT_ERR_INPUT: .*/, ''))).toEqual(['  skipped b\\xff.txt', '  skipped c.txt', '  skipped d\\xfe']);
    const skipped = manifestOf(one).skipped as { path: string; reason: string }[];
    expect(skipped.map((s) => s.path)).toEqual(['b\\xff.txt', 'c.txt', 'd\\xfe']);
    expect(skipped[0]!.reason).toMatch(/not valid UTF-8/);
    expect(shardkit(['ls', one]).stdout).toBe('a\ne\nf\n');

    expectPartsListSkipsOnce(src, root, 2, ['--pass-module', mod, '--on-error', 'skip'], skipped);
  });
});

describe('a file name that ends with its first dot', () => {
  it('stops the pack naming the file, or with --on-error skip is listed as skipped once, in one-machine, merged and resumed packs', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    const files: Record<string, string> = {
      'a.txt': 'a', 'q.': 'q', 'd/r.': 'r', 'd/k.txt': 'k', 'b\\c.txt': 'backslash', 'e.txt': 'e', 'f/g.txt': 'g', 'h.txt': 'h', 'i.txt': 'i', 'j.txt': 'j',
    };
    for (const [rel, body] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
      fs.writeFileSync(path.join(src, rel), body);
    }

    const dotFailed = path.join(root, 'dot-failed');
    const failedDot = shardkit(['pack', src, '--out', dotFailed]);
    expect(failedDot.status).toBe(1);
    expect(failedDot.stderr).toBe('shardkit: SHARDKIT_ERR_INPUT: Source file q. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)\n');
    expect(fs.existsSync(path.join(dotFailed, 'manifest.json'))).toBe(false);

    const flags = ['--on-error', 'skip', '--shard', '2KiB'];
    const one = path.join(root, 'one');
    const r = shardkit(['pack', src, '--out', one, ...flags, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const skipped = manifestOf(one).skipped as { path: string; reason: string }[];
    // in key order: 'b\c', 'd/r', 'q'
    expect(skipped).toEqual([
      { path: 'b\\c.txt', reason: 'SHARDKIT_ERR_UNSAFE_PATH: sample key "b\\\\c" contains NUL or a backslash' },
      { path: 'd/r.', reason: 'SHARDKIT_ERR_INPUT: Source file d/r. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)' },
      { path: 'q.', reason: 'SHARDKIT_ERR_INPUT: Source file q. has no WebDataset key: its name ends with its first dot (an empty extension would name it without the dot)' },
    ]);
    expect(JSON.parse(r.stdout).skipped).toEqual(skipped);
    const summary = shardkit(['pack', src, '--out', path.join(root, 'summary'), ...flags]);
    expect(summary.stdout).toMatch(/packed 7 samples .*; 3 skipped \(listed below and in the manifest\)/);
    expect(shardkit(['ls', one]).stdout).toBe('a\nd/k\ne\nf/g\nh\ni\nj\n');

    expectPartsListSkipsOnce(src, root, 3, flags, skipped);

    // killed after a few shards (one sample each), resumed: the same bytes as a pack that ran through (one sample
    // at a time: the pass does not meet h before the samples ahead of it are written)
    const mod = path.join(root, 'die-at-h.mjs');
    fs.writeFileSync(mod, "export default (s) => { if (s.key === 'h' && process.env.DIE_AT_H) process.exit(3); return s; };\n");
    const whole = path.join(root, 'whole');
    expect(shardkit(['pack', src, '--out', whole, ...flags, '--concurrency', '1', '--pass-module', mod]).status).toBe(0);
    const resumed = path.join(root, 'resumed');
    expect(shardkit(['pack', src, '--out', resumed, ...flags, '--concurrency', '1', '--pass-module', mod], { env: { DIE_AT_H: '1' } }).status).toBe(3);
    expect(fs.existsSync(path.join(resumed, 'manifest.json'))).toBe(false);
    const again = shardkit(['pack', src, '--out', resumed, ...flags, '--concurrency', '1', '--pass-module', mod, '--resume', '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).resumedSamples).toBeGreaterThan(0);
    expect(manifestOf(resumed).skipped).toEqual(skipped);
    const a = readTree(whole, ['pack-report.json']);
    const b = readTree(resumed, ['pack-report.json']);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [name, bytes] of a) expect(b.get(name)!.equals(bytes), name).toBe(true);
  });
});

describe('a hidden file under --include-hidden', () => {
  it('has no WebDataset key: it stops the pack naming the file, or with --on-error skip is listed once; a hidden directory\'s files are packed', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    const files: Record<string, string> = { 'a.txt': 'a', 'd/.hidden.txt': 'h', 'd/k.txt': 'k', '.cache/x.jpg': 'x', '.gitignore': 'g', 'e.txt': 'e' };
    for (const [rel, body] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
      fs.writeFileSync(path.join(src, rel), body);
    }

    const failedDir = path.join(root, 'failed');
    const failed = shardkit(['pack', src, '--out', failedDir, '--include-hidden']);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toBe("shardkit: SHARDKIT_ERR_INPUT: Source file .gitignore has no WebDataset key: its name starts with '.'\n");
    expect(fs.existsSync(path.join(failedDir, 'manifest.json'))).toBe(false);

    const flags = ['--include-hidden', '--on-error', 'skip'];
    const one = path.join(root, 'one');
    const r = shardkit(['pack', src, '--out', one, ...flags]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/packed 4 samples .*; 2 skipped \(listed below and in the manifest\)/);
    const skipped = manifestOf(one).skipped as { path: string; reason: string }[];
    // in key order: '', 'd/'
    expect(skipped).toEqual([
      { path: '.gitignore', reason: "SHARDKIT_ERR_INPUT: Source file .gitignore has no WebDataset key: its name starts with '.'" },
      { path: 'd/.hidden.txt', reason: "SHARDKIT_ERR_INPUT: Source file d/.hidden.txt has no WebDataset key: its name starts with '.'" },
    ]);
    expect(shardkit(['ls', one]).stdout).toBe('.cache/x\na\nd/k\ne\n');

    expectPartsListSkipsOnce(src, root, 3, flags, skipped);

    // without --include-hidden, hidden names are skipped and counted, not listed
    const plain = path.join(root, 'plain');
    const p = shardkit(['pack', src, '--out', plain]);
    expect(p.status, p.stderr).toBe(0);
    expect(manifestOf(plain).skipped).toEqual([]);
    expect(shardkit(['ls', plain]).stdout).toBe('a\nd/k\ne\n');
  });
});
