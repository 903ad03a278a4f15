/**
 * Issue 26, items 6 and 8 (families: every file-system error of every writer gets a code, the file and advice; every
 * piece of advice names an option the command has). Each writing command runs, through the built CLI, into a tmpfs
 * with 0 bytes free (a real ENOSPC, the lock file's write first) and into a read-only one (EROFS). Needs root for
 * mount(8); skipped without it, and a failure in CI.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDerive } from '../../cli/commands/derive.js';
import { registerExtract } from '../../cli/commands/extract.js';
import { registerGet } from '../../cli/commands/get.js';
import { registerIndex } from '../../cli/commands/index.js';
import { registerMerge } from '../../cli/commands/merge.js';
import { registerPack } from '../../cli/commands/pack.js';
import { registerReindex } from '../../cli/commands/reindex.js';
import { shardkit } from '../helpers/cli.js';
import { run } from '../helpers/tools.js';
import { tmpDir } from '../helpers/tmp.js';

const REGISTER: Record<string, (p: Command) => void> = {
  pack: registerPack,
  derive: registerDerive,
  merge: registerMerge,
  index: registerIndex,
  reindex: registerReindex,
  extract: registerExtract,
  get: registerGet,
};

/** The long options of `name` as commander registers them. */
function optionsOf(name: string): Set<string> {
  const program = new Command();
  REGISTER[name]!(program);
  const cmd = program.commands.find((c) => c.name() === name)!;
  return new Set(cmd.options.map((o) => o.long as string));
}

/** Every `--option` a message advises is one of the command's. */
function expectAdviceFits(command: string, stderr: string): void {
  const known = optionsOf(command);
  for (const opt of stderr.match(/--[a-z][a-z-]*/g) ?? []) expect(known, `${command} advises ${opt}: ${stderr}`).toContain(opt);
}

const isRoot = process.getuid?.() === 0;
const mounts: string[] = [];
function mount(size: string): string | undefined {
  const mnt = tmpDir();
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mnt]).status !== 0) {
    if (process.env.CI) throw new Error('mounting a small tmpfs failed; ENOSPC and EROFS cannot be tested');
    return undefined;
  }
  mounts.push(mnt);
  return mnt;
}
afterAll(() => {
  for (const m of mounts) spawnSync('umount', [m]);
});

/** Fills the file system of `dir` to its last byte. */
function fill(dir: string): void {
  const fd = fs.openSync(path.join(dir, 'fill'), 'w');
  const block = Buffer.alloc(4096, 1);
  try {
    for (;;) fs.writeSync(fd, block);
  } catch (err) {
    expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
  }
  try {
    for (;;) fs.writeSync(fd, block, 0, 1);
  } catch {
    // the last bytes are gone too
  } finally {
    fs.closeSync(fd);
  }
}

let src: string;
let ds: string;
let parts: string[];
let tar: string;
beforeAll(() => {
  src = tmpDir();
  for (let i = 0; i < 40; i++) {
    fs.mkdirSync(path.join(src, `c${i % 2}`), { recursive: true });
    fs.writeFileSync(path.join(src, `c${i % 2}`, `s${i}.txt`), `sample ${i} `.repeat(50));
  }
  ds = path.join(tmpDir(), 'ds');
  expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
  parts = [0, 1].map((i) => {
    const p = path.join(tmpDir(), `p${i}`);
    expect(shardkit(['pack', src, '--out', p, '--part', `${i}/2`]).status).toBe(0);
    return p;
  });
  tar = path.join(tmpDir(), 'foreign.tar');
  run('tar', ['-C', src, '-cf', tar, 'c0', 'c1']);
});

/** The command line of each writer, writing under `mnt`. */
function commandLines(mnt: string): Record<string, string[]> {
  return {
    pack: ['pack', src, '--out', path.join(mnt, 'p')],
    derive: ['derive', ds, '--out', path.join(mnt, 'd'), '--pass', 'tag=dirname'],
    merge: ['merge', ...parts, '--out', path.join(mnt, 'm')],
    index: ['index', tar, '--out', path.join(mnt, 'i')],
    reindex: ['reindex', path.join(mnt, 'r')],
    extract: ['extract', ds, path.join(mnt, 'x')],
    get: ['get', ds, 'c0/s0', '--out', path.join(mnt, 'g.txt')],
  };
}

describe.runIf(isRoot)('writers on a full or read-only file system', () => {
  it('disk_full_every_writer: one coded line naming a file on that disk, advice it can follow, no lock left', () => {
    const mnt = mount('1m');
    if (mnt === undefined) return;
    // reindex rewrites the index and manifest of a dataset already on the full disk
    fs.cpSync(ds, path.join(mnt, 'r'), { recursive: true });
    fill(mnt);
    for (const [command, args] of Object.entries(commandLines(mnt))) {
      const r = shardkit(args);
      expect(r.status, `${command}: ${r.stderr}`).toBe(1);
      expect(r.stderr, command).toMatch(new RegExp(`^shardkit: SHARDKIT_ERR_IO: cannot [a-z]+ ${mnt}/\\S+: no space left on the device; [^\\n]+\\n$`));
      expectAdviceFits(command, r.stderr);
    }
    for (const dir of ['p', 'd', 'm', 'i', 'r']) expect(fs.existsSync(path.join(mnt, dir, '.shardkit-lock')), dir).toBe(false);
    // with room again, the next run starts at once (no empty lock holds it up)
    fs.rmSync(path.join(mnt, 'fill'));
    const again = shardkit(['pack', src, '--out', path.join(mnt, 'p')]);
    expect(again.status, again.stderr).toBe(0);
  });

  it('read_only_out_every_writer: EROFS, not ENOENT, naming the directory', () => {
    const mnt = mount('1m');
    if (mnt === undefined) return;
    fs.cpSync(ds, path.join(mnt, 'r'), { recursive: true });
    execFileSync('mount', ['-o', 'remount,ro', mnt]);
    for (const [command, args] of Object.entries(commandLines(mnt))) {
      const r = shardkit(args);
      expect(r.status, `${command}: ${r.stderr}`).toBe(1);
      expect(r.stderr, command).toMatch(new RegExp(`^shardkit: SHARDKIT_ERR_IO: cannot [a-z]+ ${mnt}/\\S+: read-only file system; [^\\n]+\\n$`));
      expectAdviceFits(command, r.stderr);
    }
  });
});
