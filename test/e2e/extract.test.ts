/** `shardkit extract` through the built CLI: packing then extracting gives back the source tree byte for byte. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTree, shardkit, shardkitAsync, shardkitWithFileLimit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function makeTree(): string {
  const src = tmpDir();
  for (let i = 0; i < 40; i++) {
    const dir = path.join(src, i % 2 ? 'cat' : 'dog');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.bin`), Buffer.alloc(200 + i * 37, i));
    if (i % 4 === 0) fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.seg.txt`), `label ${i}\n`.repeat(20));
  }
  return src;
}

describe('shardkit extract', () => {
  for (const args of [[], ['--layout', 'packed', '--compress', 'lz4']]) {
    it(`recreates the source tree byte for byte (${args.join(' ') || 'tar'})`, () => {
      const src = makeTree();
      const ds = path.join(tmpDir(), 'ds');
      expect(shardkit(['pack', src, '--out', ds, '--shard', '8KB', ...args]).status).toBe(0);
      const out = tmpDir();
      const r = shardkit(['extract', ds, out]);
      expect(r.status, r.stderr).toBe(0);
      expect(readTree(out)).toEqual(readTree(src));
    });
  }

  it('--prefix extracts only the keys that start with it', () => {
    const src = makeTree();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    expect(shardkit(['extract', ds, out, '--prefix', 'cat/']).status).toBe(0);
    const got = [...readTree(out).keys()];
    expect(got.length).toBe(20);
    expect(got.every((p) => p.startsWith('cat/'))).toBe(true);
  });

  it('refuses to write through a symbolic link already in the target', () => {
    const src = makeTree();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    const elsewhere = tmpDir();
    fs.symlinkSync(elsewhere, path.join(out, 'cat'));
    const r = shardkit(['extract', ds, out]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_UNSAFE_PATH: /);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });

  it('refuses to extract into the dataset itself (exit 2): a member named manifest.json would replace the manifest', () => {
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'manifest.json'), '{"my":"config"}');
    fs.writeFileSync(path.join(src, 'a.txt'), 'hi');
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    for (const target of [ds, path.join(ds, 'x'), path.dirname(ds)]) {
      const r = shardkit(['extract', ds, target]);
      expect(r.status, target).toBe(2);
      expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: the extract target [^\n]+ the dataset directory [^\n]+\n$/);
    }
    expect(shardkit(['info', ds]).status).toBe(0);
  });

  it('a dataset that cannot be opened leaves no target directory behind', () => {
    const target = path.join(tmpDir(), 'new');
    const r = shardkit(['extract', tmpDir(), target]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_NOT_A_DATASET: [^\n]+\n$/);
    expect(fs.existsSync(target)).toBe(false);
  });

  it('a failed write (EFBIG) leaves no cut-short file under a member name, and no temporary', () => {
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.bin'), Buffer.alloc(20_000, 1));
    fs.writeFileSync(path.join(src, 'b.bin'), Buffer.alloc(200_000, 2));
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    fs.writeFileSync(path.join(out, 'b.bin'), 'from an earlier run');
    const r = shardkitWithFileLimit(['extract', ds, out], 100);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_IO: cannot write .*b\.bin: EFBIG[^\n]*\n$/);
    expect(fs.readdirSync(out).sort()).toEqual(['a.bin', 'b.bin']);
    expect(fs.readFileSync(path.join(out, 'a.bin'))).toEqual(fs.readFileSync(path.join(src, 'a.bin')));
    // the file already there is untouched until a complete one replaces it
    expect(fs.readFileSync(path.join(out, 'b.bin'), 'utf8')).toBe('from an earlier run');
  });

  it('killed mid-file (SIGKILL): only a .shardkit-tmp- file is left, never a cut-short member; a rerun ignores it', async () => {
    const src = bigSource();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    expect(await interruptMidFile(['extract', ds, out], out, 'SIGKILL')).toBe('SIGKILL');
    // and its lock, which the rerun takes over (its owner is dead)
    const left = fs.readdirSync(out).filter((n) => n !== '.shardkit-lock');
    expect(left.filter((n) => n.startsWith('.shardkit-tmp-'))).toHaveLength(1);
    for (const name of left.filter((n) => !n.startsWith('.shardkit-tmp-'))) expect(sameBytes(path.join(out, name), path.join(src, name)), name).toBe(true);
    const again = shardkit(['extract', ds, out]);
    expect(again.status, again.stderr).toBe(0);
    expectSameFiles(out, src);
  });

  it('Ctrl-C (SIGINT) mid-file lets that file finish: no temporary, no cut-short file, ended by the signal', async () => {
    const src = bigSource();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    expect(await interruptMidFile(['extract', ds, out], out, 'SIGINT')).toBe('SIGINT');
    const names = fs.readdirSync(out);
    expect(names.filter((n) => n.startsWith('.shardkit-tmp-'))).toEqual([]);
    expect(names.length).toBeGreaterThan(0);
    expect(names.length).toBeLessThan(24);
    for (const name of names) expect(sameBytes(path.join(out, name), path.join(src, name)), name).toBe(true);
  });

  it('Ctrl-C while a member too large for one step is written in pieces: its temporary is removed, no cut-short file', async () => {
    const src = bigSource();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    // members past 1 MB are streamed (as those past 256 MiB are), in pieces of 300 kB
    const streamed = { SHARDKIT_TEST_MAX_SPAN_BYTES: '1000000', SHARDKIT_TEST_VERIFY_CHUNK_BYTES: '300000' };
    expect(await interruptMidFile(['extract', ds, out], out, 'SIGINT', streamed)).toBe('SIGINT');
    const names = fs.readdirSync(out);
    expect(names.filter((n) => n.startsWith('.shardkit-tmp-'))).toEqual([]);
    expect(names.length).toBeLessThan(24);
    for (const name of names) expect(sameBytes(path.join(out, name), path.join(src, name)), name).toBe(true);
  });
});

/** 24 members of 2 MB: writes long enough to be caught in. */
function bigSource(): string {
  const src = tmpDir();
  for (let i = 0; i < 24; i++) fs.writeFileSync(path.join(src, `${String(i).padStart(2, '0')}.bin`), Buffer.alloc(2_000_000, i + 1));
  return src;
}

// Buffer.equals: toEqual on megabytes compares byte by byte, for minutes
const sameBytes = (a: string, b: string) => fs.readFileSync(a).equals(fs.readFileSync(b));

/**
 * The files of `src` are in `out` with the same bytes; `.shardkit-tmp-*` files in `out` are ignored, and so is the
 * lock a killed extract leaves (the next extract takes it over).
 */
function expectSameFiles(out: string, src: string): void {
  const names = fs.readdirSync(out).filter((n) => !n.startsWith('.shardkit-tmp-') && n !== '.shardkit-lock');
  expect(names.sort()).toEqual(fs.readdirSync(src).sort());
  for (const name of names) expect(sameBytes(path.join(out, name), path.join(src, name)), name).toBe(true);
}

/**
 * Starts the CLI and catches it in the middle of a file: stopped (SIGSTOP) while a temporary exists in `dir`, it
 * gets `signal` and then SIGCONT. Resolves to the signal that ended it (null: it exited). A kill that lands at a
 * random moment would hit a write only some of the time.
 */
async function interruptMidFile(args: string[], dir: string, signal: NodeJS.Signals, env: Record<string, string> = {}): Promise<NodeJS.Signals | null> {
  const child = shardkitAsync(args, env);
  let ended: NodeJS.Signals | null | undefined;
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, by) => resolve((ended = by))));
  // a member's temporary, not the probe file extract makes first to learn how the file system folds names
  const holdsTemp = () => fs.readdirSync(dir).some((n) => n.startsWith('.shardkit-tmp-') && !n.startsWith('.shardkit-tmp-probe-'));
  while (ended === undefined) {
    if (holdsTemp()) {
      child.kill('SIGSTOP');
      while (ended === undefined && processState(child.pid as number) !== 'T') await sleep(1);
      if (ended === undefined && holdsTemp()) {
        child.kill(signal);
        child.kill('SIGCONT');
        return exited;
      }
      child.kill('SIGCONT');
    }
    await sleep(1);
  }
  throw new Error('extract ended before it was caught with a temporary file');
}

/** The state letter of /proc/PID/stat (T: stopped). */
function processState(pid: number): string {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return ''; // gone: the exit event follows
  }
  return stat.charAt(stat.lastIndexOf(')') + 2);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
