/**
 * Dropping the page cache before a cold epoch, and checking that it worked. A cold-cache claim is only made
 * when fincore (util-linux) saw none of the probe files resident after the drop: containers often refuse
 * /proc/sys/vm/drop_caches (EACCES, EROFS), and a silent failure would make a warm epoch look cold.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { CacheDropResult } from './child-protocol.js';

const DROP_CACHES = '/proc/sys/vm/drop_caches';
const WARM_UP_CHUNK_BYTES = 1 << 20;

/**
 * Reads every byte of `files` once, into one reused buffer, so a warm bench times page-cache hits from its first
 * epoch on instead of whatever an earlier command happened to leave cached. Returns what it read and how long it took.
 * `chunkBytes`: the size of each read (bench/scale.mjs reads as verify does, 4 MiB at a time).
 */
export function readFilesOnce(files: readonly string[], chunkBytes = WARM_UP_CHUNK_BYTES): { files: number; bytes: number; seconds: number } {
  const t0 = performance.now();
  const buffer = Buffer.allocUnsafe(chunkBytes);
  let bytes = 0;
  for (const file of files) {
    const fd = fs.openSync(file, 'r');
    try {
      for (let n; (n = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0; ) bytes += n;
    } finally {
      fs.closeSync(fd);
    }
  }
  return { files: files.length, bytes, seconds: (performance.now() - t0) / 1000 };
}

/** Resident bytes of `files` per fincore, or a reason it could not be measured. */
export function residentBytes(files: readonly string[]): { bytes: number } | { error: string } {
  if (files.length === 0) return { bytes: 0 };
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--raw', '--output', 'RES', ...files], { encoding: 'utf8' });
  if (r.error !== undefined) return { error: (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'fincore is not installed' : r.error.message };
  if (r.status !== 0) return { error: `fincore failed: ${r.stderr.trim().split('\n')[0] ?? ''}` };
  let bytes = 0;
  for (const line of r.stdout.split('\n')) if (line.trim() !== '') bytes += Number(line.trim());
  return Number.isFinite(bytes) ? { bytes } : { error: `unexpected fincore output: ${r.stdout.slice(0, 80)}` };
}

function tryDropCaches(): { ok: true } | { ok: false; why: string } {
  // drop_caches frees clean pages only: write dirty ones back first.
  spawnSync('sync');
  try {
    fs.writeFileSync(DROP_CACHES, '3');
    return { ok: true };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, why: `${DROP_CACHES}: ${e.code ?? e.message}` };
  }
}

function tryVmtouch(dirs: readonly string[]): { ok: true } | { ok: false; why: string } {
  const r = spawnSync('vmtouch', ['-q', '-e', ...dirs], { encoding: 'utf8' });
  if (r.error !== undefined) return { ok: false, why: (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'vmtouch is not installed' : r.error.message };
  if (r.status !== 0) return { ok: false, why: `vmtouch -e failed: ${r.stderr.trim().split('\n')[0] ?? ''}` };
  return { ok: true };
}

/**
 * Drops the page cache: `sync` + `echo 3 > /proc/sys/vm/drop_caches` (root), else `vmtouch -e` on `evictDirs`;
 * then checks with fincore that none of `probeFiles` is resident. Never throws: the result says what happened.
 */
export function dropPageCache(evictDirs: readonly string[], probeFiles: readonly string[]): CacheDropResult {
  const reasons: string[] = [];
  let method = 'none';
  const drop = tryDropCaches();
  if (drop.ok) method = `sync + echo 3 > ${DROP_CACHES}`;
  else {
    reasons.push(drop.why);
    const vm = tryVmtouch(evictDirs);
    if (vm.ok) method = 'vmtouch -e (posix_fadvise DONTNEED on every file)';
    else reasons.push(vm.why);
  }
  const dropped = method !== 'none';
  const resident = residentBytes(probeFiles);
  let verified = false;
  if ('error' in resident) reasons.push(`not checked: ${resident.error}`);
  else if (resident.bytes > 0) reasons.push(`${resident.bytes} bytes of ${probeFiles.length} probe files still resident after the drop (fincore)`);
  else verified = dropped;
  if (dropped && verified) reasons.push(`fincore: 0 bytes resident in ${probeFiles.length} probe files`);
  return { dropped, verified, method, ...(reasons.length > 0 ? { detail: reasons.join('; ') } : {}) };
}
