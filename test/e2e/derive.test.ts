/** The built CLI's derive: variants of a dataset, shards to shards, with what the source carries over. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import { makeBinTree as makeTree, sampleOf } from '../helpers/bin-tree.js';
import { ROOT, killAfterJournalLines, readTree, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const IMAGES = path.join(ROOT, 'fixtures/images');
const GOOD = ['--exclude', 'broken/**'];

describe('shardkit derive', () => {
  it('derives a variant dataset from an existing one', async () => {
    const root = tmpDir();
    const base = path.join(root, 'base');
    expect(shardkit(['pack', IMAGES, '--out', base, ...GOOD]).status).toBe(0);
    const variant = path.join(root, 'v');
    const r = shardkit(['derive', base, '--out', variant, '--pass', 'resize=8x8:fill', '--pass', 'format=png']);
    expect(r.status, r.stderr).toBe(0);
    const s = await sampleOf(variant, 'dog/004');
    const meta = await sharp(s.members.png).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([8, 8, 'png']);
    const m = JSON.parse(fs.readFileSync(path.join(variant, 'manifest.json'), 'utf8'));
    expect(m.passes.map((p: { name: string }) => p.name)).toEqual(['resize', 'format']);
  });

  it('a member over the readers\' guard is TOO_LARGE naming --max-member-bytes, and derive takes that option', () => {
    const root = tmpDir();
    const base = path.join(root, 'base');
    expect(shardkit(['pack', IMAGES, '--out', base, ...GOOD]).status).toBe(0);
    const low = shardkit(['derive', base, '--out', path.join(root, 'low'), '--pass', 'format=png', '--max-member-bytes', '1KB']);
    expect(low.status).toBe(1);
    expect(low.stderr).toMatch(/^shardkit: SHARDKIT_ERR_TOO_LARGE: sample "[^"]+" member "\w+" is \d+ bytes, over maxMemberBytes 1000 \(.*--max-member-bytes/);
    const raised = shardkit(['derive', base, '--out', path.join(root, 'raised'), '--pass', 'format=png', '--max-member-bytes', '64MiB']);
    expect(raised.status, raised.stderr).toBe(0);
  });

  it('derive lists skipped samples (path, reason) and pass counters in its summary, as pack does', () => {
    const root = tmpDir();
    const base = path.join(root, 'base');
    expect(shardkit(['pack', IMAGES, '--out', base]).status).toBe(0); // broken/006.jpg stored as it is
    const args = ['derive', base, '--pass', 'resize=8x8', '--pass', `tag=${path.join(IMAGES, 'labels.csv')}`, '--on-error', 'skip'];
    const json = shardkit([...args, '--out', path.join(root, 'j'), '--json']);
    expect(json.status, json.stderr).toBe(0);
    const summary = JSON.parse(json.stdout);
    expect(summary.skipped).toEqual([{ path: 'broken/006.jpg', reason: expect.stringMatching(/^SHARDKIT_ERR_INPUT: Cannot decode image member jpg of sample broken\/006 in pass resize/) }]);
    expect(summary.passStats).toEqual({ tag: { tagged: 4, untagged: 2, staleClsRemoved: 0, unusedRows: 0 } }); // dog/005 and labels (the csv) have no row
    const text = shardkit([...args, '--out', path.join(root, 't')]);
    expect(text.stdout).toMatch(/; 1 skipped \(listed below and in the manifest\); 2 samples left untagged by pass tag\n  skipped broken\/006\.jpg: SHARDKIT_ERR_INPUT: Cannot decode image member jpg of sample broken\/006 in pass resize[^\n]*\n$/);
  });

  it("derive keeps the source's list of skipped inputs (the variant lacks them too), in key order with its own", () => {
    const root = tmpDir();
    const base = path.join(root, 'base');
    expect(shardkit(['pack', IMAGES, '--out', base, '--pass', 'resize=16x16', '--on-error', 'skip']).status).toBe(0);
    const baseSkipped = JSON.parse(fs.readFileSync(path.join(base, 'manifest.json'), 'utf8')).skipped;
    expect(baseSkipped.map((s: { path: string }) => s.path)).toEqual(['broken/006.jpg']);
    const mod = path.join(root, 'drop-cat-002.mjs');
    fs.writeFileSync(mod, "export default (s) => (s.key === 'cat/002' ? 'skip' : s);\n");
    const variant = path.join(root, 'v');
    expect(shardkit(['derive', base, '--out', variant, '--pass-module', mod]).status).toBe(0);
    const skipped = JSON.parse(fs.readFileSync(path.join(variant, 'manifest.json'), 'utf8')).skipped;
    expect(skipped).toEqual([...baseSkipped, { path: 'cat/002.png', reason: 'dropped by pass custom:drop-cat-002.mjs' }]);
  });

  it("derive keeps the source's pass files and manifest fields; a new pass's own of the same name replace them", () => {
    const root = tmpDir();
    const base = path.join(root, 'base');
    expect(shardkit(['pack', IMAGES, '--out', base, ...GOOD, '--pass', 'tag=dirname']).status).toBe(0);
    const manifest = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    const kept = path.join(root, 'kept');
    expect(shardkit(['derive', base, '--out', kept, '--pass', 'resize=8x8']).status).toBe(0);
    expect(fs.readFileSync(path.join(kept, 'classes.txt'), 'utf8')).toBe('cat\ndog\n');
    expect(manifest(kept).files).toEqual(['classes.txt', 'shardindex.json']);
    expect(manifest(kept).extra).toEqual({ classes: ['cat', 'dog'] });
    // a table with another class list than the source's
    const labels = path.join(root, 'labels.csv');
    fs.writeFileSync(labels, 'path,label\ncat/001.jpg,ant\ncat/002.png,cat\ndog/003.webp,dog\ndog/004.jpg,dog\n');
    const relabelled = path.join(root, 'relabelled');
    const r = shardkit(['derive', kept, '--out', relabelled, '--pass', `tag=${labels}`]);
    expect(r.status, r.stderr).toBe(0);
    expect(fs.readFileSync(path.join(relabelled, 'classes.txt'), 'utf8')).toBe('ant\ncat\ndog\n');
    expect(manifest(relabelled).extra).toEqual({ classes: ['ant', 'cat', 'dog'] });
    expect(shardkit(['get', relabelled, 'cat/002', '--ext', 'cls']).stdout).toBe('1');
    // a table of integer labels writes cls but no class list: the source's would index nothing
    const ints = path.join(root, 'ints.csv');
    fs.writeFileSync(ints, 'path,label\ncat/001.jpg,7\ncat/002.png,-1\n');
    const numbered = path.join(root, 'numbered');
    expect(shardkit(['derive', kept, '--out', numbered, '--pass', `tag=${ints}`]).status).toBe(0);
    expect([manifest(numbered).files, manifest(numbered).extra, fs.existsSync(path.join(numbered, 'classes.txt'))]).toEqual([['shardindex.json'], {}, false]);
    expect(shardkit(['get', numbered, 'cat/002', '--ext', 'cls']).stdout).toBe('-1');
  });

  it('derive of an adopted tar set writes shardkit shards that reindex reads back as they are (no adoption marker)', () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 's1.txt'), 'compressible '.repeat(300));
    const tar = path.join(root, 't.tar');
    execFileSync('tar', ['-C', src, '-cf', tar, 's1.txt']);
    const adopted = path.join(root, 'adopted');
    expect(shardkit(['index', tar, '--out', adopted]).status).toBe(0);
    const mod = path.join(root, 'same.mjs');
    fs.writeFileSync(mod, 'export default (s) => s;\n');
    const variant = path.join(root, 'v');
    expect(shardkit(['derive', adopted, '--out', variant, '--compress', 'lz4', '--pass-module', mod]).status).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(variant, 'manifest.json'), 'utf8')).extra).toEqual({});
    const index = fs.readFileSync(path.join(variant, 'index.skidx'));
    fs.rmSync(path.join(variant, 'index.skidx'));
    expect(shardkit(['reindex', variant]).status).toBe(0);
    expect(fs.readFileSync(path.join(variant, 'index.skidx')).equals(index)).toBe(true);
    expect(shardkit(['get', variant, 's1', '--ext', 'txt']).stdout).toBe('compressible '.repeat(300));
  });

  it('parts stay parts through reindex and derive: their merge is the derive of a one-machine pack', async () => {
    const src = makeTree(120);
    const root = tmpDir();
    const parts = [0, 1].map((i) => path.join(root, `part${i}`));
    parts.forEach((p, i) => expect(shardkit(['pack', src, '--out', p, '--part', `${i}/2`, '--shard', '64KB']).status).toBe(0));
    fs.rmSync(path.join(parts[0]!, 'index.skidx'));
    expect(shardkit(['reindex', parts[0]!]).status).toBe(0);
    const mod = path.join(root, 'mark.mjs');
    fs.writeFileSync(mod, "export default (s) => ({ ...s, members: { ...s.members, mark: new TextEncoder().encode(s.key) } });\n");
    const derived = parts.map((p, i) => path.join(root, `derived${i}`));
    parts.forEach((p, i) => expect(shardkit(['derive', p, '--out', derived[i]!, '--pass-module', mod]).status).toBe(0));
    derived.forEach((d, i) => expect(JSON.parse(fs.readFileSync(path.join(d, 'manifest.json'), 'utf8')).part).toEqual({ index: i, count: 2 }));
    const merged = path.join(root, 'merged');
    const r = shardkit(['merge', ...derived, '--out', merged]);
    expect(r.status, r.stderr).toBe(0);
    const one = path.join(root, 'one');
    expect(shardkit(['pack', src, '--out', one, '--pass-module', mod]).status).toBe(0);
    const a = await openDataset(one);
    const b = await openDataset(merged);
    expect(b.size).toBe(a.size);
    for (let i = 0; i < a.size; i++) {
      const [x, y] = [await a.at(i), await b.at(i)];
      expect(y.key).toBe(x.key);
      for (const ext of Object.keys(x.members)) expect(Buffer.from(y.members[ext]!).equals(Buffer.from(x.members[ext]!)), `${x.key}.${ext}`).toBe(true);
    }
    await a.close();
    await b.close();
  });

  it('a tag pass in a derive owns cls: samples it does not tag lose the cls that indexed the old class list', async () => {
    const root = tmpDir();
    const src = path.join(root, 'src');
    for (const c of ['cat', 'dog', 'emu']) for (const i of [1, 2]) {
      fs.mkdirSync(path.join(src, c), { recursive: true });
      fs.writeFileSync(path.join(src, c, `${i}.txt`), `${c} ${i}`);
    }
    fs.writeFileSync(path.join(src, 'top.txt'), 'at the root: no class');
    const base = path.join(root, 'base');
    expect(shardkit(['pack', src, '--out', base, '--pass', 'tag=dirname', '--quiet']).status).toBe(0);
    const labels = path.join(root, 'labels.csv');
    fs.writeFileSync(labels, 'path,label\ncat/1.txt,tabby\n');
    const retagged = path.join(root, 'retagged');
    const r = shardkit(['derive', base, '--out', retagged, '--pass', `tag=${labels}`]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/6 samples left untagged by pass tag \(5 of them lost the cls of the class list this pass replaced\)/);
    expect(JSON.parse(fs.readFileSync(path.join(retagged, 'manifest.json'), 'utf8')).extra.classes).toEqual(['tabby']);
    const ds = await openDataset(retagged);
    const cls: Record<string, string | undefined> = {};
    for (let i = 0; i < ds.size; i++) {
      const s = await ds.at(i);
      cls[s.key] = s.members.cls === undefined ? undefined : Buffer.from(s.members.cls).toString();
    }
    await ds.close();
    expect(cls).toEqual({ 'cat/1': '0', 'cat/2': undefined, 'dog/1': undefined, 'dog/2': undefined, 'emu/1': undefined, 'emu/2': undefined, top: undefined });
    // tag=dirname over it: the root sample has no class, and keeps none from before
    const again = path.join(root, 'again');
    expect(shardkit(['derive', retagged, '--out', again, '--pass', 'tag=dirname', '--quiet']).status).toBe(0);
    expect((await sampleOf(again, 'top')).members.cls).toBeUndefined();
    expect(Buffer.from((await sampleOf(again, 'emu/2')).members.cls!).toString()).toBe('2');
  });

  it('killed, resumes to the same bytes; a resume over a source that changed since is refused (INPUT_CHANGED)', async () => {
    const root = tmpDir();
    const src = makeTree(200, 2000);
    const base = path.join(root, 'base');
    expect(shardkit(['pack', src, '--out', base, '--shard', '64KB', '--quiet']).status).toBe(0);
    const slow = path.join(root, 'slow.mjs');
    fs.writeFileSync(slow, 'export default async (s) => { await new Promise((r) => setTimeout(r, 2)); return s; };\n');
    const args = (out: string): string[] => ['derive', base, '--out', out, '--shard', '64KB', '--pass-module', slow, '--concurrency', '1', '--quiet'];
    const whole = path.join(root, 'whole');
    expect(shardkit(args(whole)).status).toBe(0);
    const kill = async (out: string): Promise<void> => {
      await killAfterJournalLines(args(out), out, 4);
      expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
    };
    const out = path.join(root, 'out');
    await kill(out);
    const resumed = shardkit([...args(out), '--resume']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(readTree(out, ['pack-report.json'])).toEqual(readTree(whole, ['pack-report.json']));
    // the source packed again from a tree with one file less: the samples after the cut are other ones
    const changed = path.join(root, 'changed');
    await kill(changed);
    fs.rmSync(path.join(src, 'c0', 's000007.bin'));
    fs.rmSync(base, { recursive: true });
    expect(shardkit(['pack', src, '--out', base, '--shard', '64KB', '--quiet']).status).toBe(0);
    const refused = shardkit([...args(changed), '--resume']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT_CHANGED: .*the source dataset changed since the interrupted derive/);
    expect(fs.existsSync(path.join(changed, 'manifest.json'))).toBe(false);
  });
});
