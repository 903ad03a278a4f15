/**
 * The cache directory's layout, shared by every process of a node that uses it:
 *
 *     <dir>/.space.lock                      held while a process makes room (scan, evict, reserve)
 *     <dir>/<dataset id>/identity.json       the dataset's location (no query) and index CRC32C, for people
 *     <dir>/<dataset id>/<file>~<crc>~<bytes>          a verified copy of a shard
 *     <dir>/<dataset id>/<file>~<crc>~<bytes>.lock     a process is fetching it (O_EXCL, see cache-lock.ts)
 *     <dir>/<dataset id>/<file>~<crc>~<bytes>.<pid>.part   its download, counted at its full size
 *     <dir>/<dataset id>/<file>~<crc>~<bytes>.ok       proof the copy was verified; its mtime: the copy's last use
 *     <dir>/<dataset id>/<index file>~<crc>~<bytes>.idx  a verified copy of the index (index-copy.ts), with the same
 *                                                      .lock, .<pid>.part and .ok files as a shard's copy
 *
 * The dataset id hashes the location without query (presigned signatures change) and the index's CRC32C, so two
 * datasets, or a dataset rewritten at one URL, never share copies. A copy's name holds the shard's CRC32C and size
 * from the index: a shard replaced in the manifest has another name, and its old copy is never served.
 */
import fs from 'node:fs';
import path from 'node:path';
import { crc32cHex } from '../../formats/checksum.js';
import { nodeCrypto } from '../lazy-crypto.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { pidAlive } from './cache-lock.js';
import { lastUseMs } from './copy-proof.js';

export const SPACE_LOCK = '.space.lock';
const PART = /\.(\d+)\.part$/;
const PROOF_TEMP = /\.ok\.(\d+)\.tmp$/;
const COPY = /~[0-9a-f]{8}~(\d+)$/;
const INDEX_COPY = /~[0-9a-f]{8}~(\d+)\.idx$/;

/** The subdirectory name of a dataset in the cache. */
export function datasetId(location: string, indexCrc32c: string): string {
  const withoutQuery = location.replace(/[?#].*$/s, '');
  return nodeCrypto().createHash('sha256').update(`${withoutQuery}\0${indexCrc32c}`).digest('hex').slice(0, 20);
}

/** The file name of a shard's verified copy (a flat name, whatever the shard's path in the dataset). */
export function copyName(shard: ShardRecord): string {
  return `${encodeURIComponent(shard.file)}~${crc32cHex(shard.crc32c)}~${shard.bytes}`;
}

/** The file name of the index's verified copy (index-copy.ts): the manifest's index name, CRC32C and size. */
export function indexCopyName(file: string, crc32cHex: string, bytes: number): string {
  return `${encodeURIComponent(file)}~${crc32cHex}~${bytes}.idx`;
}

/** Whether `name` (a base name) is an index copy. */
export function isIndexCopy(name: string): boolean {
  return INDEX_COPY.test(name);
}

export function partName(copy: string): string {
  return `${copy}.${process.pid}.part`;
}

/** A file of the cache as a scan sees it. */
export interface CachedFile {
  path: string;
  /** Bytes it holds on disk, or will once complete (a partial download counts at its full size). */
  bytes: number;
  /** A verified copy (evictable), not a download in progress. */
  complete: boolean;
  /** Its last use (ms since the epoch): a copy's proof's mtime (copy-proof.ts), else the file's. */
  mtimeMs: number;
}

/**
 * Every copy and download under `root` (all datasets: maxBytes bounds the directory). Downloads of dead processes
 * are removed on the way: nothing of them is trusted, and they would hold room forever.
 */
export function scanCache(root: string): CachedFile[] {
  const files: CachedFile[] = [];
  for (const sub of safeList(root)) {
    const dir = path.join(root, sub);
    for (const name of safeList(dir)) {
      const file = path.join(dir, name);
      const part = PART.exec(name);
      if (part !== null) {
        if (!pidAlive(Number(part[1]))) {
          fs.rmSync(file, { force: true });
          continue;
        }
        const copy = COPY.exec(name.replace(PART, '')) ?? INDEX_COPY.exec(name.replace(PART, ''));
        files.push({ path: file, bytes: copy === null ? statSize(file) : Number(copy[1]), complete: false, mtimeMs: Date.now() });
        continue;
      }
      const proofTemp = PROOF_TEMP.exec(name);
      if (proofTemp !== null) {
        if (!pidAlive(Number(proofTemp[1]))) fs.rmSync(file, { force: true });
        continue;
      }
      if (COPY.exec(name) === null && INDEX_COPY.exec(name) === null) continue; // identity.json, lock files, proofs
      try {
        const st = fs.statSync(file);
        files.push({ path: file, bytes: st.size, complete: true, mtimeMs: lastUseMs(file, st.mtimeMs) });
      } catch {
        // evicted by another process meanwhile
      }
    }
  }
  return files;
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

function statSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}
