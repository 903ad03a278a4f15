/** `shardkit derive --select` through the built CLI: exemplar selection, seeded, recorded, and its bad input. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import { readTree, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

describe('shardkit derive --select', () => {
  it('keeps N samples of each class, the same ones for the same seed, and says so', async () => {
    const raw = path.join(tmpDir(), 'raw');
    expect(shardkit(['synth', raw, '--samples', '90', '--classes', '3', '--sizes', 'tiny', '--seed', '2']).status).toBe(0);
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', raw, '--out', ds, '--pass', 'tag=dirname', '--quiet']).status).toBe(0);
    const outs = [0, 1, 2].map(() => path.join(tmpDir(), 'ex'));
    const r = shardkit(['derive', ds, '--out', outs[0] as string, '--select', 'per-class:4', '--seed', 'task-3']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^selected \(per-class:4, seed task-3\) and derived 12 samples into 1 shard at /);
    expect(shardkit(['derive', ds, '--out', outs[1] as string, '--select', 'per-class:4', '--seed', 'task-3', '--quiet']).status).toBe(0);
    expect(readTree(outs[1] as string)).toEqual(readTree(outs[0] as string));
    expect(shardkit(['derive', ds, '--out', outs[2] as string, '--select', 'random:10', '--seed', '5', '--json']).status).toBe(0);
    const ex = await openDataset(outs[0] as string);
    expect(ex.manifest.extra.selection).toMatchObject({ select: 'per-class:4', seed: 'task-3', samples: 12 });
    const perClass = new Map<string, number>();
    for await (const e of ex.entries()) {
      const cls = new TextDecoder().decode((await ex.read(e)).members.cls);
      perClass.set(cls, (perClass.get(cls) ?? 0) + 1);
    }
    expect([...perClass.values()]).toEqual([4, 4, 4]);
    await ex.close();
  });

  it('refuses a bad spec as bad usage, and no pass and no selection', () => {
    const ds = tmpDir();
    const bad = shardkit(['derive', ds, '--out', path.join(tmpDir(), 'x'), '--select', 'fraction:2']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('shardkit: SHARDKIT_ERR_INVALID_ARG: Expected random:N, per-class:N or fraction:F (0 < F <= 1), e.g. per-class:20 for --select but received "fraction:2"\n');
    const none = shardkit(['derive', ds, '--out', path.join(tmpDir(), 'y')]);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/derive needs at least one --pass, or a --select/);
  });
});
