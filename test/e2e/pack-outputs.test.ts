/**
 * Where pack, merge and index write, against what they read and what is already there: nothing of the user's is deleted,
 * packed into itself, or left out because of where the output lies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function tree(root: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

const SOURCE = { 'a/1.txt': 'one', 'a/2.txt': 'two', 'b/3.txt': 'three' };

describe('pack --out', () => {
  it('refuses a non-empty directory that holds no dataset, --force or not, and deletes nothing there', () => {
    const src = tree(path.join(tmpDir(), 'src'), SOURCE);
    const out = tree(path.join(tmpDir(), 'mine'), { 'notes.tmp/keep.txt': 'mine', 'backup-20240101.tar': 'mine', 'x.tmp': 'mine' });
    for (const force of [[], ['--force']]) {
      const r = shardkit(['pack', src, '--out', out, ...force]);
      expect(r.status, force.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_OUTPUT_EXISTS: .* is not empty and holds no shardkit dataset/);
    }
    expect(fs.readdirSync(out).sort()).toEqual(['backup-20240101.tar', 'notes.tmp', 'x.tmp']);
  });

  it('inside the source, leaves out only itself: a same-named file or directory elsewhere is packed', () => {
    const src = tree(path.join(tmpDir(), 'src'), { ...SOURCE, 'a/out/x.txt': 'x', 'b/out': 'file named out' });
    const r = shardkit(['pack', src, '--out', path.join(src, 'out')]);
    expect(r.status, r.stderr).toBe(0);
    expect(shardkit(['ls', path.join(src, 'out')]).stdout).toBe('a/1\na/2\na/out/x\nb/3\nb/out\n');
  });

  it('a later pack leaves out every dataset inside the source (an earlier output, an interrupted one) and says so', () => {
    const src = tree(path.join(tmpDir(), 'src'), { ...SOURCE, 'notes/manifest.json': '{"mine": true}' });
    expect(shardkit(['pack', src, '--out', path.join(src, 'train', 'shards'), '--quiet']).status).toBe(0);
    // an interrupted write of another dataset: its journal, no manifest
    tree(path.join(src, 'wip'), { '.shardkit-work/journal.jsonl': '{"type":"begin","options":{}}\n', 'shard-000000.tar': 'x' });
    const out = path.join(tmpDir(), 'again');
    const r = shardkit(['pack', src, '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/; left out 2 dataset directories \(shardkit output inside the source\): train\/shards, wip\n$/);
    // a user's own manifest.json is no dataset: packed like any file
    expect(shardkit(['ls', out]).stdout).toBe('a/1\na/2\nb/3\nnotes/manifest\n');
    const json = JSON.parse(shardkit(['pack', src, '--out', out, '--force', '--json']).stdout);
    expect(json).toMatchObject({ samples: 4, datasetDirs: ['train/shards', 'wip'], walk: { skippedDatasets: 2 } });
  });

  it('refuses an output that is the source through a symlink', () => {
    const src = tree(path.join(tmpDir(), 'src'), SOURCE);
    const link = path.join(tmpDir(), 'link');
    fs.symlinkSync(src, link);
    const r = shardkit(['pack', src, '--out', link]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: --out must not be the source directory/);
    expect(fs.readdirSync(src).sort()).toEqual(['a', 'b']);
  });
});

describe('merge --out', () => {
  it('refuses one of its parts, or a directory inside one, and leaves the part whole', () => {
    const src = tree(path.join(tmpDir(), 'src'), SOURCE);
    const root = tmpDir();
    const parts = [0, 1].map((i) => {
      const dir = path.join(root, `p${i}`);
      expect(shardkit(['pack', src, '--out', dir, '--part', `${i}/2`]).status).toBe(0);
      return dir;
    });
    const before = fs.readdirSync(parts[1] as string).sort();
    for (const out of [parts[1] as string, path.join(parts[1] as string, 'merged')]) {
      const r = shardkit(['merge', ...parts, '--out', out, '--force']);
      expect(r.status, out).toBe(2);
      expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: --out .* is part .* or inside it/);
    }
    expect(fs.readdirSync(parts[1] as string).sort()).toEqual(before);
    expect(shardkit(['verify', parts[1] as string]).status).toBe(0);
  });

  function packParts(src: string): string[] {
    const root = tmpDir();
    return [0, 1].map((i) => {
      const dir = path.join(root, `p${i}`);
      expect(shardkit(['pack', src, '--out', dir, '--part', `${i}/2`]).status).toBe(0);
      return dir;
    });
  }

  it('refuses a non-empty directory that holds no dataset (the source tree too), --force or not, and overwrites nothing there', () => {
    const src = tree(path.join(tmpDir(), 'src'), SOURCE);
    const parts = packParts(src);
    const mine = { 'notes.txt': 'my notes', 'index.skidx': 'MY OWN INDEX', 'part-0-of-2-shard-000000.tar': 'MY OWN TAR' };
    const out = tree(path.join(tmpDir(), 'mine'), mine);
    for (const target of [out, src]) {
      const before = [...fs.readdirSync(target)].sort();
      for (const force of [[], ['--force']]) {
        const r = shardkit(['merge', ...parts, '--out', target, ...force]);
        expect(r.status, `${target} ${force.join(' ')}`).toBe(2);
        expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_OUTPUT_EXISTS: .* is not empty and holds no shardkit dataset/);
      }
      expect(fs.readdirSync(target).sort()).toEqual(before);
    }
    for (const [name, text] of Object.entries(mine)) expect(fs.readFileSync(path.join(out, name), 'utf8')).toBe(text);
  });

  it('--force over a dataset replaces it whole: its shards and pack-report.json go, other files of the user stay', () => {
    const src = tree(path.join(tmpDir(), 'src'), SOURCE);
    const parts = packParts(src);
    const out = path.join(tmpDir(), 'old');
    expect(shardkit(['pack', src, '--out', out, '--shard', '2KiB']).status).toBe(0);
    fs.writeFileSync(path.join(out, 'notes.txt'), 'mine');
    expect(fs.readdirSync(out).filter((f) => /^shard-\d{6}\.tar$/.test(f)).length).toBeGreaterThan(1);
    const refused = shardkit(['merge', ...parts, '--out', out]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/already holds a finished dataset; use --force/);
    const r = shardkit(['merge', ...parts, '--out', out, '--force']);
    expect(r.status, r.stderr).toBe(0);
    const merged = fs.readdirSync(out).sort();
    expect(merged).toEqual(['index.skidx', 'manifest.json', 'notes.txt', 'shardindex.json', ...fs.readdirSync(parts[0] as string).filter((f) => f.endsWith('.tar')), ...fs.readdirSync(parts[1] as string).filter((f) => f.endsWith('.tar'))].sort());
    expect(shardkit(['verify', out]).status).toBe(0);
    // a later reindex without the manifest sees the merged shards alone
    fs.rmSync(path.join(out, 'manifest.json'));
    expect(shardkit(['reindex', out]).status).toBe(0);
    expect(shardkit(['ls', out]).stdout).toBe('a/1\na/2\nb/3\n');
  });
});

describe('derive --out', () => {
  it('refuses the source dataset (as DS/, through a symlink, or a directory inside it) even with --force, and leaves it whole', () => {
    const src = tree(path.join(tmpDir(), 'src'), SOURCE);
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const link = path.join(tmpDir(), 'link');
    fs.symlinkSync(ds, link);
    const before = fs.readdirSync(ds).sort();
    for (const out of [ds, `${ds}/`, link, path.join(ds, 'variant')]) {
      const r = shardkit(['derive', ds, '--out', out, '--pass', 'tag=dirname', '--force']);
      expect(r.status, out).toBe(2);
      expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: --out .* is the source dataset .* or inside it/);
    }
    const viaLink = shardkit(['derive', link, '--out', ds, '--pass', 'tag=dirname', '--force']);
    expect(viaLink.status).toBe(2);
    expect(fs.readdirSync(ds).sort()).toEqual(before);
    expect(shardkit(['verify', ds]).status).toBe(0);
  });
});
