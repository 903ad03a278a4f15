/**
 * Ctrl-C of derive and append (writes a journal makes resumable, as pack's): one line on stderr saying what was kept
 * and the command that finishes it; the process ends by SIGINT; that command then finishes the job.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stagePaths } from '../../src/pack/append-stage.js';
import { openDataset } from '../../src/read/dataset.js';
import { CLI, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function makeTree(dir: string, prefix: string, n: number): void {
  for (let i = 0; i < n; i++) {
    const sub = path.join(dir, `${prefix}${i % 3}`);
    fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `f${String(i).padStart(4, '0')}.bin`), Buffer.alloc(2000 + i, i & 255));
  }
}

/** A pass that waits forever on sample `key` while HANG is set, so the command is stopped while it runs. */
function hangModule(key: string): string {
  const mod = path.join(tmpDir(), 'hang.mjs');
  fs.writeFileSync(mod, `export default (s) => (process.env.HANG && s.key === ${JSON.stringify(key)} ? new Promise(() => setInterval(() => {}, 1000)) : s);\n`);
  return mod;
}

/** Runs the CLI with HANG set, sends SIGINT once `workDir`'s journal has more than 10 lines; resolves with stderr and the signal. */
async function interrupt(args: string[], workDir: string): Promise<{ stderr: string; signal: string | null; kept: number }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HANG: '1' } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const journal = path.join(workDir, '.shardkit-work', 'journal.jsonl');
  const exited = new Promise<string | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
  let sent = false;
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (fs.existsSync(journal) && fs.readFileSync(journal, 'utf8').split('\n').length > 10) {
        clearInterval(timer);
        sent = true;
        child.kill('SIGINT');
        resolve();
      }
    }, 5);
    void exited.then(() => {
      clearInterval(timer);
      if (!sent) reject(new Error(`${args[0]} finished before it could be stopped: ${stderr}`));
    });
  });
  const signal = await exited;
  return { stderr, signal, kept: fs.readFileSync(journal, 'utf8').trim().split('\n').length - 1 };
}

async function size(dir: string): Promise<number> {
  const ds = await openDataset(dir);
  const n = ds.size;
  await ds.close();
  return n;
}

describe('Ctrl-C of a journalled write', () => {
  it('derive prints what it kept and the command that finishes it', async () => {
    const src = tmpDir();
    makeTree(src, 'd', 200);
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds, '--quiet']).status).toBe(0);
    const out = path.join(tmpDir(), 'derived');
    const mod = hangModule('d1/f0199');
    const r = await interrupt(['derive', ds, '--out', out, '--shard', '16KB', '--pass-module', mod], out);
    expect(r.signal).toBe('SIGINT');
    const resume = `shardkit derive ${ds} --out ${out} --shard 16KB --pass-module ${mod} --resume`;
    expect(r.stderr).toMatch(new RegExp(`^shardkit: derive stopped \\(\\d+ samples in ${r.kept} finished shards kept in ${out}\\); finish it with \`${resume}\`, or start over with --force\\n$`));
    const finished = shardkit(resume.split(' ').slice(1));
    expect(finished.status, finished.stderr).toBe(0);
    expect(await size(out)).toBe(200);
  });

  it('append prints what its stage kept and the command that finishes it', async () => {
    const src = tmpDir();
    makeTree(src, 'a', 30);
    const mod = hangModule('b1/f0199');
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds, '--pass-module', mod, '--quiet']).status).toBe(0);
    const more = tmpDir();
    makeTree(more, 'b', 200);
    const stage = stagePaths(ds).added;
    const r = await interrupt(['append', ds, more, '--shard', '16KB', '--pass-module', mod], stage);
    expect(r.signal).toBe('SIGINT');
    const resume = `shardkit append ${ds} ${more} --shard 16KB --pass-module ${mod} --resume`;
    expect(r.stderr).toMatch(new RegExp(`^shardkit: append stopped \\(\\d+ samples in ${r.kept} finished shards kept in ${stage}\\); finish it with \`${resume}\`, or start over with --force\\n$`));
    expect(await size(ds)).toBe(30); // the dataset is still its old version
    const finished = shardkit(resume.split(' ').slice(1));
    expect(finished.status, finished.stderr).toBe(0);
    expect(await size(ds)).toBe(230);
  });
});
