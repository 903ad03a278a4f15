/** `pack --key-rule path`: Kaggle-style names stay separate samples; GNU tar extracts the source unchanged; reindex and --resume keep the rule. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import { readTree, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function kaggle(): string {
  const src = tmpDir();
  fs.mkdirSync(path.join(src, 'train'));
  for (let i = 0; i < 30; i++) {
    for (const animal of ['cat', 'dog']) fs.writeFileSync(path.join(src, 'train', `${animal}.${i}.jpg`), `${animal} ${i}`.repeat(i + 1));
  }
  fs.writeFileSync(path.join(src, 'train', 'dog.0.json'), '{"note": 1}');
  return src;
}

describe('pack --key-rule path', () => {
  it('keys each file by its path without the last extension, records the rule, and tar -xf gives the source back', async () => {
    const src = kaggle();
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', src, '--out', out, '--key-rule', 'path', '--shard', '8KB', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ samples: 60, members: 61 });
    const ds = await openDataset(out);
    expect(ds.manifest.extra).toEqual({ keyRule: 'path' });
    const dog0 = await ds.get('train/dog.0');
    expect(Object.keys(dog0.members).sort()).toEqual(['jpg', 'json']);
    expect(Buffer.from(dog0.members.jpg as Uint8Array).toString()).toBe('dog 0');
    await ds.close();
    const extracted = tmpDir();
    for (const shard of fs.readdirSync(out).filter((n) => n.endsWith('.tar'))) execFileSync('tar', ['-xf', path.join(out, shard), '-C', extracted]);
    expect(readTree(extracted)).toEqual(readTree(src));
    // reindex reads the names back with the recorded rule
    fs.rmSync(path.join(out, 'index.skidx'));
    expect(shardkit(['reindex', out]).status).toBe(0);
    expect(shardkit(['ls', out]).stdout.split('\n').filter(Boolean)).toHaveLength(60);
    expect(shardkit(['verify', out]).status).toBe(0);
  });

  it('a resume with another key rule is refused, naming --key-rule; a bad rule is a usage error', () => {
    const src = kaggle();
    const out = path.join(tmpDir(), 'ds');
    fs.mkdirSync(path.join(out, '.shardkit-work'), { recursive: true });
    const journal = { type: 'begin', options: { layout: 'tar', compress: 'none', shardBytes: 8000, pageSize: 4096, shardPrefix: 'shard-', passes: [], input: { include: [], exclude: [], includeHidden: false, followSymlinks: false, keyRule: 'path' } } };
    fs.writeFileSync(path.join(out, '.shardkit-work', 'journal.jsonl'), `${JSON.stringify(journal)}\n`);
    const r = shardkit(['pack', src, '--out', out, '--shard', '8KB', '--resume']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--key-rule was "path", now not set; run again with the same options, or start over with --force');
    expect(shardkit(['pack', src, '--out', out, '--shard', '8KB', '--resume', '--key-rule', 'path']).status).toBe(0);
    const bad = shardkit(['pack', src, '--key-rule', 'stem']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--key-rule/);
  });

  it('the same samples through passes, without the native addon, and in a derived variant (which keeps the rule)', async () => {
    const src = kaggle();
    const mod = path.join(tmpDir(), 'same.mjs');
    fs.writeFileSync(mod, 'export default (s) => s;\n');
    const keysOf = (dir: string): string => shardkit(['ls', dir, '--long']).stdout.replace(/\tshard-\d+\.tar\t\d+\t/g, '\t');
    const plain = path.join(tmpDir(), 'plain');
    expect(shardkit(['pack', src, '--out', plain, '--key-rule', 'path']).status).toBe(0);
    const passed = path.join(tmpDir(), 'passed');
    const r = shardkit(['pack', src, '--out', passed, '--key-rule', 'path', '--pass-module', mod]);
    expect(r.status, r.stderr).toBe(0);
    const js = path.join(tmpDir(), 'js');
    expect(shardkit(['pack', src, '--out', js, '--key-rule', 'path'], { env: { SHARDKIT_NATIVE: '0' } }).status).toBe(0);
    expect(keysOf(passed)).toBe(keysOf(plain));
    expect(fs.readFileSync(path.join(js, 'shard-000000.tar')).equals(fs.readFileSync(path.join(plain, 'shard-000000.tar')))).toBe(true);
    const variant = path.join(tmpDir(), 'variant');
    const d = shardkit(['derive', plain, '--out', variant, '--pass-module', mod]);
    expect(d.status, d.stderr).toBe(0);
    expect(keysOf(variant)).toBe(keysOf(plain));
    const ds = await openDataset(variant);
    expect(ds.manifest.extra).toMatchObject({ keyRule: 'path' });
    await ds.close();
  });

  it('after the numbered-names error, the advised --key-rule path runs as it is: a write that failed before its first shard kept nothing to resume', () => {
    const src = kaggle();
    const out = path.join(tmpDir(), 'ds');
    const failed = shardkit(['pack', src, '--out', out]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('pass --key-rule path to key each file by its path without its last extension (train/cat.0.jpg -> key train/cat.0)');
    const info = shardkit(['info', out]);
    expect(info.stderr).toContain(`a pack failed after 0 samples in 0 finished shards (SHARDKIT_ERR_INPUT: Source files train/cat.0.jpg`);
    expect(info.stderr).toContain(`\`shardkit pack <src> --out ${out} --resume\` fails the same way until the cause is fixed; start over with \`--force\` (also to change an option)`);
    expect(info.stderr).not.toContain('--on-error skip');
    const again = shardkit(['pack', src, '--out', out, '--key-rule', 'path', '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).samples).toBe(60);
  });

  it('append keys the new files by the rule the dataset was packed with', () => {
    const src = kaggle();
    const out = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', out, '--key-rule', 'path']).status).toBe(0);
    const more = tmpDir();
    fs.mkdirSync(path.join(more, 'train'));
    for (let i = 30; i < 35; i++) fs.writeFileSync(path.join(more, 'train', `dog.${i}.jpg`), `dog ${i}`);
    const r = shardkit(['append', out, more, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const keys = shardkit(['ls', out]).stdout.split('\n').filter(Boolean);
    expect(keys).toHaveLength(65);
    expect(keys).toContain('train/dog.34');
    expect(shardkit(['verify', out]).status).toBe(0);
  });
});
