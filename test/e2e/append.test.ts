/**
 * `shardkit append` through the built CLI: the result, its errors, and kills at every step of the commit. Killed
 * anywhere, the dataset is the old version byte for byte (new names aside: shards and an index that no manifest
 * lists yet); `--resume` then gives the same bytes as an append never interrupted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import { killAfterJournalLines, readTree, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function makeTree(dir: string, names: string[], size = 200): string {
  for (const [i, name] of names.entries()) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), Buffer.alloc(size + i, i & 255));
  }
  return dir;
}

const range = (prefix: string, n: number, ext = 'bin'): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}.${ext}`);

/** A base dataset (tag=dirname, small shards) and a source to append: new classes, and one key the dataset has. */
function setup(): { base: string; src: string } {
  const old = makeTree(tmpDir(), [...range('cat/', 40), ...range('dog/', 40)]);
  const base = path.join(tmpDir(), 'base');
  const r = shardkit(['pack', old, '--out', base, '--shard', '8KB', '--pass', 'tag=dirname', '--quiet']);
  expect(r.status, r.stderr).toBe(0);
  const src = makeTree(tmpDir(), [...range('ant/', 60), ...range('cat/', 60).slice(38), ...range('eel/', 60)], 300);
  return { base, src };
}

function copyOf(dir: string): string {
  const to = path.join(tmpDir(), 'ds');
  fs.cpSync(dir, to, { recursive: true });
  return to;
}

const APPEND = ['--shard', '8KB', '--on-error', 'skip', '--quiet'];

/** The files of the old version, as they were. */
function expectOldVersion(ds: string, before: Map<string, Buffer>): void {
  const now = readTree(ds);
  for (const [name, bytes] of before) expect(now.get(name)?.equals(bytes), name).toBe(true);
}

describe('shardkit append', () => {
  it('appends, verifies, and prints a JSON summary', async () => {
    const { base, src } = setup();
    const ds = copyOf(base);
    const r = shardkit(['append', ds, src, '--shard', '8KB', '--on-error', 'skip', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s).toMatchObject({ appended: 140, samples: 220, index: 'index-1.skidx', appends: 1, duplicates: ['cat/0038', 'cat/0039'], oldEntriesRead: 80 });
    const v = shardkit(['verify', ds]);
    expect(v.status, v.stdout + v.stderr).toBe(0);
    expect(shardkit(['info', ds]).stdout).toMatch(/^appends +1 \(140 samples\)$/m);
    expect(JSON.parse(shardkit(['info', ds, '--json']).stdout).appends).toEqual([140]);
    const d = await openDataset(ds);
    expect(d.manifest.extra.classes).toEqual(['cat', 'dog', 'ant', 'eel']);
    expect(new TextDecoder().decode((await d.get('eel/0001')).members.cls)).toBe('3');
    await d.close();
  });

  it('refuses a key the dataset has in one line, exit 1, and leaves the dataset as it was', () => {
    const { base, src } = setup();
    const ds = copyOf(base);
    const before = readTree(ds);
    const r = shardkit(['append', ds, src, '--shard', '8KB']);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_DUPLICATE_KEY: key "cat\/0038" is already in dataset /);
    expect(readTree(ds)).toEqual(before);
  });

  it('refuses another layout and a conflicting pass as bad usage (exit 2)', () => {
    const { base, src } = setup();
    const r = shardkit(['append', base, src, '--layout', 'packed']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: dataset .* has the tar layout, not packed; new samples take the dataset's layout: leave --layout out\n$/);
    const p = shardkit(['append', base, src, '--pass', 'resize=8x8']);
    expect(p.status).toBe(2);
    expect(p.stderr).toMatch(/differ from those of dataset .*: give none, or exactly those\n$/);
  });

  const points = ['append:staged', 'append:restaged', 'append:merged', 'append:moved', 'append:committed'];
  it.each(points)('killed at %s: the old version stays; --resume gives the bytes of an uninterrupted append', async (point) => {
    const { base, src } = setup();
    const reference = copyOf(base);
    expect(shardkit(['append', reference, src, ...APPEND]).status).toBe(0);
    const ds = copyOf(base);
    const before = readTree(ds);
    const killed = shardkit(['append', ds, src, ...APPEND], { env: { SHARDKIT_CRASH_AT: point } });
    expect(killed.status).toBe(-1); // killed by a signal
    if (point !== 'append:committed') {
      expectOldVersion(ds, before);
      const d = await openDataset(ds);
      expect(d.size).toBe(80);
      await d.close();
    }
    // a plain append does not run over it
    const again = shardkit(['append', ds, src, ...APPEND]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/SHARDKIT_ERR_OUTPUT_EXISTS: .* holds an interrupted append; finish it with `shardkit append --resume`/);
    const resumed = shardkit(['append', ds, src, ...APPEND, '--resume']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(readTree(ds)).toEqual(readTree(reference));
  });

  it('killed while packing the new samples: --resume continues from the finished shards, same bytes', async () => {
    const { base, src } = setup();
    const reference = copyOf(base);
    expect(shardkit(['append', reference, src, ...APPEND]).status).toBe(0);
    const ds = copyOf(base);
    const before = readTree(ds);
    await killAfterJournalLines(['append', ds, src, ...APPEND, '--concurrency', '1'], path.join(ds, '.shardkit-append', 'new'), 4);
    expectOldVersion(ds, before);
    const resumed = shardkit(['append', ds, src, ...APPEND, '--resume', '--json', '--quiet']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(readTree(ds)).toEqual(readTree(reference));
  });

  it('--force discards an interrupted append', () => {
    const { base, src } = setup();
    const reference = copyOf(base);
    expect(shardkit(['append', reference, src, ...APPEND]).status).toBe(0);
    const ds = copyOf(base);
    expect(shardkit(['append', ds, src, ...APPEND], { env: { SHARDKIT_CRASH_AT: 'append:moved' } }).status).toBe(-1);
    const r = shardkit(['append', ds, src, ...APPEND, '--force']);
    expect(r.status, r.stderr).toBe(0);
    expect(readTree(ds)).toEqual(readTree(reference));
  });
});
