/**
 * Pack faults: an input deleted during the pack, no space left on the device, permission denied. Each ends in one
 * clear line, exit 1 and no manifest; `--resume` completes once the cause is fixed.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import { CLI, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function makeTree(dir: string, n: number, size = 3000): void {
  for (let i = 0; i < n; i++) {
    const sub = path.join(dir, `d${i % 3}`);
    fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `f${String(i).padStart(4, '0')}.bin`), Buffer.alloc(size + i, i & 255));
  }
}

async function sampleCount(dir: string): Promise<number> {
  const ds = await openDataset(dir);
  const n = ds.size;
  await ds.close();
  return n;
}

const isRoot = process.getuid?.() === 0;
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts) spawnSync('umount', [m]);
});

describe('pack faults', () => {
  it('a source file deleted during the pack stops it with INPUT_CHANGED; --resume finishes after the fix', async () => {
    const src = tmpDir();
    // the reader threads hold at most a few tasks (256 samples each) ahead of the pass that deletes the victim, so the
    // victim is the last of 6000 files in d0: listed by the walk before the deletion, not yet read when it goes
    makeTree(src, 18000, 100);
    const victim = path.join(src, 'd0', 'f9999.bin');
    const mod = path.join(tmpDir(), 'delete-later.mjs');
    // a pass that, while the pack runs, deletes a file the walk has already listed
    fs.writeFileSync(mod, `import fs from 'node:fs';\nexport default (s) => { if (s.key === 'd0/f0003') fs.rmSync(${JSON.stringify(victim)}, { force: true }); return s; };\n`);
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', src, '--out', out, '--shard', '256KB', '--concurrency', '1', '--pass-module', mod]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT_CHANGED: .*f9999\.bin vanished/);
    expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
    fs.writeFileSync(victim, Buffer.alloc(100 + 9999, 9999 & 255)); // the cause is fixed
    const ok = shardkit(['pack', src, '--out', out, '--shard', '256KB', '--concurrency', '1', '--pass-module', mod, '--resume', '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).resumedSamples).toBeGreaterThan(0);
    expect(await sampleCount(out)).toBe(18000);
  });

  it.runIf(isRoot)('no space left on the device: one line naming the file, no manifest; --resume completes with room', async () => {
    const src = tmpDir();
    makeTree(src, 200, 5000);
    const mnt = tmpDir();
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=400k', 'tmpfs', mnt]).status === 0;
    if (!mounted) {
      if (process.env.CI) throw new Error('mounting a small tmpfs failed; ENOSPC cannot be tested');
      return;
    }
    mounts.push(mnt);
    const out = path.join(mnt, 'ds');
    const r = shardkit(['pack', src, '--out', out, '--shard', '64KB']);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_IO: cannot write .*no space left on the device/);
    expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
    execFileSync('mount', ['-o', 'remount,size=8m', mnt]);
    const ok = shardkit(['pack', src, '--out', out, '--shard', '64KB', '--resume', '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).resumedSamples).toBeGreaterThan(0);
    expect(await sampleCount(out)).toBe(200);
  });

  it.runIf(isRoot)('permission denied on an input file: INPUT naming it, exit 1; --resume completes after chmod', async () => {
    // root reads anything: run the CLI as nobody, with a tree nobody can read except one file
    const base = fs.mkdtempSync('/tmp/shardkit-perm-');
    fs.chmodSync(base, 0o777);
    const src = path.join(base, 'src');
    makeTree(src, 30);
    execFileSync('chmod', ['-R', 'a+rX', src]);
    const locked = path.join(src, 'd1', 'f0019.bin');
    fs.chmodSync(locked, 0o000);
    const out = path.join(base, 'out');
    const asNobody = (args: string[]) =>
      spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, ...args], { encoding: 'utf8', cwd: base });
    try {
      const r = asNobody(['pack', src, '--out', out, '--shard', '8KB']);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT: cannot open .*f0019\.bin: permission denied/);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
      // --on-error skip: the reader thread that meets the file records it; the dataset lists it and holds the rest
      const skipped = asNobody(['pack', src, '--out', path.join(base, 'skip'), '--shard', '8KB', '--on-error', 'skip', '--read-threads', '3', '--json']);
      expect(skipped.status, skipped.stderr).toBe(0);
      expect(JSON.parse(fs.readFileSync(path.join(base, 'skip', 'manifest.json'), 'utf8')).skipped).toEqual([{ path: 'd1/f0019.bin', reason: expect.stringMatching(/^SHARDKIT_ERR_INPUT: cannot open .*permission denied/) }]);
      expect(await sampleCount(path.join(base, 'skip'))).toBe(29);
      // a directory the walk cannot list stops the pack whatever --on-error says, with any number of readers
      fs.chmodSync(path.join(src, 'd2'), 0o000);
      for (const threads of ['2', '1']) {
        const walk = asNobody(['pack', src, '--out', path.join(base, `walk${threads}`), '--on-error', 'skip', '--read-threads', threads]);
        expect(walk.status).toBe(1);
        expect(walk.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT: Cannot read source directory .*d2/);
        expect(walk.stderr.trim().split('\n')).toHaveLength(1);
      }
      fs.chmodSync(path.join(src, 'd2'), 0o755);
      fs.chmodSync(locked, 0o644);
      const ok = asNobody(['pack', src, '--out', out, '--shard', '8KB', '--resume', '--json']);
      expect(ok.status, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout).resumedSamples).toBeGreaterThan(0);
      expect(await sampleCount(out)).toBe(30);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('a pack that failed on an input is not told to --resume as it is: fix it or skip it, --force starts over; a changed option is named', () => {
    const src = tmpDir();
    makeTree(src, 40);
    fs.writeFileSync(path.join(src, 'd2', 'zz-broken.jpg'), 'not a jpeg');
    const out = path.join(tmpDir(), 'ds');
    const options = ['--out', out, '--shard', '16KB', '--pass', 'resize=8x8', '--concurrency', '1'];
    const r = shardkit(['pack', src, ...options]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^shardkit: SHARDKIT_ERR_INPUT: Cannot decode image member jpg of sample d2\/zz-broken in pass resize: .*; fix or remove d2\/zz-broken\.jpg and run again with --resume, or add --on-error skip to leave such inputs out \(--force starts over\)\n$/,
    );
    const info = shardkit(['info', out]);
    expect(info.status).toBe(1);
    expect(info.stderr).toMatch(/a pack failed after \d+ samples? in \d+ finished shards? \(SHARDKIT_ERR_INPUT: Cannot decode image member jpg of sample d2\/zz-broken in pass resize\): fix or remove d2\/zz-broken\.jpg/);
    expect(info.stderr).toContain('`--force` starts over');
    expect(info.stderr).not.toContain('interrupted');
    const changed = shardkit(['pack', src, ...options, '--page-size', '8KiB', '--resume']);
    expect(changed.status).toBe(2);
    expect(changed.stderr).toBe(
      `shardkit: SHARDKIT_ERR_INVALID_ARG: --resume needs the options of the interrupted pack in ${out}: --page-size was 4096, now 8192; run again with the same options, or start over with --force\n`,
    );
    const skipped = shardkit(['pack', src, ...options, '--resume', '--on-error', 'skip', '--json']);
    expect(skipped.status, skipped.stderr).toBe(0);
    expect(JSON.parse(skipped.stdout).skipped).toEqual([expect.objectContaining({ path: 'd2/zz-broken.jpg' })]);
  });

  it('Ctrl-C of a pack prints one line: what it kept and the command that finishes it', async () => {
    const src = tmpDir();
    makeTree(src, 300, 2000);
    // a pass that waits forever on the last sample while HANG is set: the pack is stopped while it runs, never after
    const mod = path.join(tmpDir(), 'hang.mjs');
    fs.writeFileSync(mod, "export default (s) => (process.env.HANG && s.key === 'd2/f0299' ? new Promise(() => setInterval(() => {}, 1000)) : s);\n");
    const out = path.join(tmpDir(), 'ds');
    const args = ['pack', src, '--out', out, '--shard', '16KB', '--pass-module', mod, '--force'];
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HANG: '1' } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const journal = path.join(out, '.shardkit-work', 'journal.jsonl');
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (fs.existsSync(journal) && fs.readFileSync(journal, 'utf8').split('\n').length > 30) {
          clearInterval(timer);
          child.kill('SIGINT');
          resolve();
        }
      }, 5);
      child.on('exit', () => {
        clearInterval(timer);
        reject(new Error('pack finished before it could be stopped'));
      });
    });
    const signal = await new Promise((r) => child.on('exit', (_code, sig) => r(sig)));
    expect(signal).toBe('SIGINT');
    const kept = fs.readFileSync(journal, 'utf8').trim().split('\n').length - 1;
    const resume = `shardkit pack ${src} --out ${out} --shard 16KB --pass-module ${mod} --resume`;
    expect(stderr).toMatch(new RegExp(`^shardkit: pack stopped \\(\\d+ samples in ${kept} finished shards kept in ${out}\\); finish it with \`${resume}\`, or start over with --force\\n$`));
    const finished = shardkit(resume.split(' ').slice(1).concat('--json'));
    expect(finished.status, finished.stderr).toBe(0);
    expect(JSON.parse(finished.stdout).resumedSamples).toBeGreaterThan(0);
    expect(await sampleCount(out)).toBe(300);
  });

  it('a pass whose promise never settles ends the pack with exit 1 and one line, not exit 0 with nothing done', () => {
    const src = tmpDir();
    makeTree(src, 20);
    const mod = path.join(tmpDir(), 'never.mjs');
    // nothing keeps the event loop alive: Node ends the process while the pack still waits
    fs.writeFileSync(mod, "export default (s) => (s.key === 'd1/f0010' ? new Promise(() => {}) : s);\n");
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', src, '--out', out, '--pass-module', mod]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('shardkit: the command ended before it finished: something it waited for never settled (a --pass-module that returns a promise it never resolves?)\n');
    expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
  });
});
