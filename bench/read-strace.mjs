/**
 * The strace cross-check of bench/read.mjs's operation counts: one epoch of a method in a child process under
 * `strace -c -f`, minus a child that reads nothing (opening the datasets, loading Node), per sample.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The methods cross-checked: the raw baselines and shardkit's sync path and loader. */
const STRACED = ['raw readFileSync', 'shardkit atSync', 'shardkit loader', 'raw fs.promises.readFile'];
/** The system calls counted as I/O. */
const IO_CALLS = ['openat', 'open', 'read', 'pread64', 'fstat', 'newfstatat', 'statx', 'close'];

/** The calls of one epoch of `method` (or 'noop'): `script --child method` under strace; undefined when it failed. */
function strace(script, opts, dir, method) {
  const out = path.join(os.tmpdir(), `shardkit-strace-${process.pid}.txt`);
  const args = ['-f', '-c', '-o', out, process.execPath, script, '--child', method, '--dir', dir, '--samples', String(opts.samples), '--concurrency', String(opts.concurrency), '--batch', String(opts.batch)];
  const res = spawnSync('strace', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (res.status !== 0) return undefined;
  const text = fs.readFileSync(out, 'utf8');
  fs.rmSync(out, { force: true });
  const calls = {};
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\S+)\s*$/.exec(line);
    if (m) calls[m[2]] = Number(m[1]);
  }
  return calls;
}

/**
 * System calls per sample (of `n`) of each cross-checked method, run by `script` (bench/read.mjs) on bench dir
 * `dir`; undefined when strace is not installed.
 */
export function straceCounts(script, opts, dir, n) {
  if (spawnSync('strace', ['-V']).status !== 0) return undefined;
  const base = strace(script, opts, dir, 'noop');
  const counts = {};
  for (const m of STRACED) {
    const calls = strace(script, opts, dir, m);
    if (base === undefined || calls === undefined) continue;
    const diff = (name) => (calls[name] ?? 0) - (base[name] ?? 0);
    counts[m] = {
      perSample: Object.fromEntries(IO_CALLS.map((name) => [name, diff(name) / n]).filter(([, v]) => Math.abs(v) >= 0.001)),
      ioSyscallsPerSample: IO_CALLS.reduce((t, name) => t + diff(name), 0) / n,
      allSyscallsPerSample: (calls.total - base.total) / n,
    };
  }
  return counts;
}
