/**
 * A proof that a cached copy was verified: `<copy>.ok`, written after the copy checked out (size and CRC32C of the
 * whole shard against the index) and was renamed into place. It records the file's inode, size, mtime and ctime.
 *
 * A later process trusts a copy without reading it again only when its proof matches the file as it is now. A write
 * to the file moves its mtime and ctime (setting the mtime back moves the ctime). A file put under the copy's name
 * by anything but a verifying writer has another inode, or no proof. A process killed between the rename and the
 * proof leaves a copy with no proof: the next user reads it whole and checks it. The proof is written under a
 * temporary name and renamed, so it is never torn. The copy's times are never touched after its proof is written:
 * its last use (LRU across processes) is its proof's mtime.
 *
 * Why: without it, every process (each rank, each DataLoader worker) reads every cached byte once more before its
 * first use: the whole cache, per process start. On the 6.7 MB of bench/cache.mjs that was little (a new process's
 * cached epoch: 30.4 vs 30.2 ms of CPU, medians of 11 alternated runs); on a cache of hundreds of GB it is minutes of
 * disk reads per process. Damage that keeps the file's times (a disk's bit rot, a write within the file system's
 * timestamp granularity of a few ms) is still caught where it is read: every member's CRC32C is checked on read,
 * and a copy failing one loses its proof, so it is checked whole, removed and fetched again.
 */
import fs from 'node:fs';
import { crc32cHex } from '../../formats/checksum.js';

const PROOF_SUFFIX = '.ok';

interface Proof {
  ino: string;
  size: string;
  mtimeNs: string;
  ctimeNs: string;
  crc32c: string;
}

export function proofPath(copy: string): string {
  return `${copy}${PROOF_SUFFIX}`;
}

function proofOf(st: fs.BigIntStats, crc32c: number): Proof {
  return { ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs), ctimeNs: String(st.ctimeNs), crc32c: crc32cHex(crc32c) };
}

/** Records that `copy` (as it is now) checked out with `crc32c`. Best effort: without a proof the copy is read again. */
export function writeProof(copy: string, crc32c: number): void {
  const proof = proofPath(copy);
  const temp = `${proof}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, JSON.stringify(proofOf(fs.statSync(copy, { bigint: true }), crc32c)));
    fs.renameSync(temp, proof);
  } catch {
    fs.rmSync(temp, { force: true });
  }
}

/** Whether `copy` has a proof matching it as it is now (inode, size, mtime, ctime) and the CRC32C the index gives. */
export function hasProof(copy: string, crc32c: number): boolean {
  let recorded: Proof;
  let now: Proof;
  try {
    recorded = JSON.parse(fs.readFileSync(proofPath(copy), 'utf8')) as Proof;
    now = proofOf(fs.statSync(copy, { bigint: true }), crc32c);
  } catch {
    return false;
  }
  return (Object.keys(now) as Array<keyof Proof>).every((k) => recorded[k] === now[k]);
}

/** Removes `copy` and its proof (eviction, damage). */
export function removeCopy(copy: string): void {
  fs.rmSync(proofPath(copy), { force: true });
  fs.rmSync(copy, { force: true });
}

/**
 * Marks `copy` used now, for LRU across processes: its proof's mtime (a copy with no proof keeps its own mtime).
 * Never fails. Synchronous: a new process opens each copy as it first reads it, and through fs.promises the touches
 * of 400 copies cost ~60 ms of its first epoch's ~650 ms of CPU (bench/cache.mjs's timed dataset, --cpu-prof),
 * against ~3 ms for utimesSync on a node-local dir.
 */
export function touchCopy(copy: string): void {
  const now = new Date();
  try {
    fs.utimesSync(proofPath(copy), now, now);
  } catch {
    // no proof (the copy keeps its own mtime), or removed meanwhile
  }
}

/** When `copy` was last used: its proof's mtime, or its own when it has none (ms since the epoch). */
export function lastUseMs(copy: string, copyMtimeMs: number): number {
  try {
    return Math.max(copyMtimeMs, fs.statSync(proofPath(copy)).mtimeMs);
  } catch {
    return copyMtimeMs;
  }
}
