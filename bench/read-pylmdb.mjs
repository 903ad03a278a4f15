/**
 * The py-lmdb side of bench/read.mjs, from Node: what a Python user has (Debian's python3-lmdb). bench/read-pylmdb.py
 * is the Python side: it builds the environment from the bench's samples.json, and times `txn.get` (copying, or
 * with `buffers=True`: zero copy) over the bench's random order, each method in a python3 process of its own.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The py-lmdb methods, each timed in a python3 process of its own: name -> extra arguments. */
export const PY_METHODS = { 'py-lmdb txn.get': [], 'py-lmdb txn.get buffers': ['--buffers'] };
export const PYTHON = '/usr/bin/python3';
const PY_SCRIPT = fileURLToPath(new URL('./read-pylmdb.py', import.meta.url));

/** The py-lmdb side's environment (written by read-pylmdb.py --build from samples.json, once per bench dir). */
const PY_LMDB_DIR = 'pylmdb';

/** Installs python3-lmdb from Debian when /usr/bin/python3 cannot import lmdb; false when that is not possible. */
export function ensurePyLmdb() {
  const ok = () => spawnSync(PYTHON, ['-c', 'import lmdb'], { stdio: 'ignore' }).status === 0;
  if (ok()) return true;
  if (process.getuid?.() !== 0) return false;
  process.stderr.write('installing python3-lmdb with apt-get\n');
  spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'python3-lmdb'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return ok();
}

/** Writes the py-lmdb environment of bench dir `dir` from its samples file, unless it is there already. */
export function buildPyLmdb(dir, samplesFile) {
  if (fs.existsSync(path.join(dir, PY_LMDB_DIR, 'data.mdb'))) return;
  const res = spawnSync(PYTHON, [PY_SCRIPT, path.join(dir, PY_LMDB_DIR), path.join(dir, samplesFile), '--build'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (res.status !== 0) throw new Error(`building the py-lmdb environment failed (exit ${res.status})`);
}

/**
 * Times py-lmdb method `name` in a python3 process of its own over the keys of `orderFile` (in bench dir `dir`):
 * `warmup` epochs, then the median of `epochs` epochs, as { ms, cpuMs, bytes }.
 */
export function timePyLmdb(name, dir, orderFile, warmup, epochs) {
  const py = [PY_SCRIPT, path.join(dir, PY_LMDB_DIR), path.join(dir, orderFile), '--warmup', String(warmup), '--epochs', String(epochs), ...PY_METHODS[name]];
  const res = spawnSync(PYTHON, py, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (res.status !== 0) throw new Error(`timing ${name} failed (exit ${res.status})`);
  return JSON.parse(res.stdout.trim().split('\n').pop());
}
