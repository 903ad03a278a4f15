import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { registerSynth } from '../../cli/commands/synth.js';
import { tmpDir } from '../helpers/tmp.js';

/** Runs `shardkit synth ...args` in-process; returns stdout, stderr and the exit code runAction set. */
async function synth(args: string[]): Promise<{ out: string; err: string; code: number }> {
  const program = new Command().exitOverride();
  registerSynth(program);
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((out += String(chunk)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((err += String(chunk)), true));
  try {
    await program.parseAsync(['synth', ...args], { from: 'user' });
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  return { out, err, code };
}

afterEach(() => {
  process.exitCode = 0;
});

describe('shardkit synth', () => {
  it('--json prints the summary of what it wrote', async () => {
    const dir = join(tmpDir(), 'ds');
    const { out, code } = await synth([dir, '--samples', '12', '--classes', '3', '--sizes', 'tiny', '--seed', '9', '--json']);
    expect(code).toBe(0);
    const summary = JSON.parse(out) as Record<string, unknown>;
    expect(summary).toMatchObject({ dir, samples: 12, classes: 3, files: 24, sizes: 'tiny', seed: 9 });
    expect(readdirSync(join(dir, 'train'))).toHaveLength(3);
  });

  it('prints one line by default and nothing with --quiet', async () => {
    const line = await synth([join(tmpDir(), 'a'), '--samples', '4', '--classes', '2', '--sizes', 'tiny']);
    expect(line.out.trim().split('\n')).toHaveLength(1);
    expect(line.out).toMatch(/4 samples \(tiny, seed 0\), 8 files/);
    const quiet = await synth([join(tmpDir(), 'b'), '--samples', '4', '--classes', '2', '--sizes', 'tiny', '--quiet']);
    expect(quiet.out).toBe('');
  });

  it('caps the default --classes at the sample count', async () => {
    const dir = join(tmpDir(), 'five');
    const r = await synth([dir, '--samples', '5', '--sizes', 'tiny', '--json']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).classes).toBe(5);
    expect(readdirSync(join(dir, 'train'))).toHaveLength(5);
  });

  it('bad arguments exit 2 with one SHARDKIT_ERR_INVALID_ARG line', async () => {
    for (const args of [
      ['--samples', 'many'],
      ['--samples', '0'],
      ['--samples', '5', '--sizes', 'huge'],
      ['--samples', '5', '--classes', '6'],
      ['--samples', '5', '--seed', '-1'],
    ]) {
      const { err, code } = await synth([join(tmpDir(), 'x'), ...args]);
      expect(code, args.join(' ')).toBe(2);
      expect(err).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: .+\n$/);
    }
  });
});
