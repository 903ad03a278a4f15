/**
 * The dataset's index file, copied whole into the shard cache, so a new process (a rank, a DataLoader worker, the
 * next job) reads its index pages from local disk instead of sending ~10 page requests over http before its first
 * batch; its lookups are then synchronous, and a fully cached epoch is read as a local one from its first batch.
 *
 * Fetched whole in one request, checked against the manifest before it is used (size, header and shard table CRC32C,
 * every page's CRC32C: indexChecksOut),
 * written under a temporary name and renamed, with the proof and lock files of a shard's copy (copy-proof.ts,
 * cache-lock.ts): a copy without a matching proof is read whole and checked, a damaged one removed and fetched again.
 * Counted in maxBytes like a shard: room is made under the directory-wide lock, evicting only other datasets' copies
 * (least recently used first); this dataset's shards are not evicted for it. The processes of this dataset never
 * evict it (ShardCache.reserve); another dataset's may, by LRU, and a process that has it open keeps reading it
 * through its open descriptor. When no copy can be made (no room, a failing directory, another process fetching it),
 * the index is read over http as without a cache, said once through `onEvent` (except while another process fetches it).
 * A dataset on a local path (a network file system) opened with a cache gets its index copied the same way.
 *
 * A page of the copy that fails its check after open (damaged on disk since it was checked, or trusted by its proof)
 * is never used: the reader removes the copy, says so once, and reads that page and all later ones from the dataset's
 * location (IndexFallback); the next process fetches a new copy.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { crc32cHex } from '../../formats/checksum.js';
import { decodeIndexHeader, decodeShardTable, HEADER_BYTES } from '../../formats/index-layout.js';
import { PAGE_CRC, PAGE_NO, pageChecksum } from '../../formats/index-page.js';
import type { ByteSource } from '../io/byte-source.js';
import { FileSource } from '../io/file-source.js';
import { isRemote } from '../io/location.js';
import type { IndexFallback } from '../read/index-reader.js';
import { datasetId, indexCopyName, partName, scanCache, SPACE_LOCK } from './cache-dir.js';
import { tryLock, unlock, withLock } from './cache-lock.js';
import { chooseVictims } from './eviction.js';
import { hasProof, removeCopy, touchCopy, writeProof } from './copy-proof.js';
import type { CacheEvent, CacheOptions } from './shard-cache.js';

/** What the manifest says of the index file. */
export interface IndexFacts {
  file: string;
  bytes: number;
  crc32c: string;
}

/** Where the copy goes: the cache root (maxBytes bounds it) and the dataset's directory in it. */
export interface IndexCopyPlace {
  root: string;
  dir: string;
  maxBytes: number;
  onEvent?: (event: CacheEvent) => void;
}

/**
 * The index's verified local copy, opened (found, or fetched with `fetchWhole` by this process); undefined when the
 * index must be read over http (see the file comment).
 */
export async function openIndexCopy(place: IndexCopyPlace, index: IndexFacts, fetchWhole: () => Promise<Uint8Array>, from = 'over http'): Promise<FileSource | undefined> {
  const copy = path.join(place.dir, indexCopyName(index.file, index.crc32c, index.bytes));
  const note = (reason: string): undefined => {
    place.onEvent?.({ type: 'bypass', shard: index.file, reason: `the index is read ${from}: ${reason}` });
    return undefined;
  };
  const expected = Number.parseInt(index.crc32c, 16) >>> 0;
  let locked = false;
  const lock = `${copy}.lock`;
  try {
    fs.mkdirSync(place.dir, { recursive: true });
    const found = await openChecked(copy, index, expected, place);
    if (found !== undefined) return found;
    if (index.bytes > place.maxBytes) return note(`it is larger than the cache's ${place.maxBytes} bytes`);
    locked = tryLock(lock);
    if (!locked) return undefined; // another process fetches it: this one reads over http, the next finds the copy
    const again = await openChecked(copy, index, expected, place);
    if (again !== undefined) return again;
    const part = path.join(place.dir, partName(path.basename(copy)));
    if (!(await reserve(place, part, index.bytes))) return note("no room: this dataset's shards and downloads fill maxBytes");
    try {
      let bytes: Uint8Array;
      try {
        bytes = await fetchWhole();
      } catch (err) {
        return note(`fetching it whole failed (${(err as Error).message})`);
      }
      if (!indexChecksOut(bytes, index)) return note('the fetched index fails its checks against the manifest (size, checksums)');
      const handle = await fsp.open(part, 'r+');
      try {
        await handle.write(bytes, 0, bytes.length, 0);
        await handle.sync();
      } finally {
        await handle.close();
      }
      fs.renameSync(part, copy);
      writeProof(copy, expected);
    } finally {
      fs.rmSync(part, { force: true });
    }
    return await openChecked(copy, index, expected, place, true);
  } catch (err) {
    return note(`the cache directory fails (${(err as Error).message})`);
  } finally {
    if (locked) unlock(lock);
  }
}

/** The copy at `file` opened when it checks out (size; CRC32C unless its proof vouches for it); removed when not. */
async function openChecked(file: string, index: IndexFacts, expected: number, place: IndexCopyPlace, justWritten = false): Promise<FileSource | undefined> {
  let source: FileSource;
  try {
    source = await FileSource.open(file);
  } catch {
    return undefined;
  }
  const trusted = justWritten || hasProof(file, expected);
  let ok = false;
  try {
    ok = source.sizeSync() === index.bytes && (trusted || indexChecksOut(source.readSync(0, index.bytes), index));
  } catch {
    ok = false;
  }
  if (!ok) {
    await source.close();
    removeCopy(file);
    place.onEvent?.({ type: 'corrupt', shard: index.file, reason: 'its copy in the cache fails its size or CRC32C check (fetched again)' });
    return undefined;
  }
  if (!trusted) writeProof(file, expected);
  touchCopy(file); // LRU across processes
  return source;
}

/**
 * Whether `bytes` are the index the manifest names: its size, its header's CRC32C (the index's identity in the
 * manifest), its shard table's CRC32C (in the header), and every page's own CRC32C and number. The manifest holds no
 * CRC32C of the whole file; these checksums cover every byte the reader uses (the rest of page 0 must be zero).
 */
export function indexChecksOut(bytes: Uint8Array, index: IndexFacts): boolean {
  if (bytes.length !== index.bytes) return false;
  try {
    const header = decodeIndexHeader(bytes.subarray(0, Math.min(bytes.length, HEADER_BYTES)), index.file, bytes.length);
    if (crc32cHex(header.crc) !== index.crc32c) return false;
    decodeShardTable(bytes.subarray(header.tableOffset, header.tableOffset + header.tableLength), header, index.file);
    if (bytes.subarray(HEADER_BYTES, Math.min(bytes.length, header.pageSize)).some((b) => b !== 0)) return false;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let p = 1; p < header.pageCount; p++) {
      const at = p * header.pageSize;
      if (at + header.pageSize > bytes.length) return false;
      const page = bytes.subarray(at, at + header.pageSize);
      if (pageChecksum(page) !== view.getUint32(at + PAGE_CRC, true) || view.getUint32(at + PAGE_NO, true) !== p) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates `part` when `bytes` more fit within maxBytes, evicting other datasets' copies (least recently used first)
 * if needed, under the directory-wide lock; false when they do not fit.
 */
function reserve(place: IndexCopyPlace, part: string, bytes: number): Promise<boolean> {
  return withLock(path.join(place.root, SPACE_LOCK), () => {
    const files = scanCache(place.root);
    const need = files.reduce((n, f) => n + f.bytes, 0) + bytes - place.maxBytes;
    const candidates = files
      .filter((f) => f.complete && path.dirname(f.path) !== place.dir)
      .map((f) => ({ id: f.path, bytes: f.bytes, lastUse: f.mtimeMs, nextUse: Infinity }));
    const victims = chooseVictims(candidates, need);
    if (victims === undefined) return false;
    for (const v of victims) removeCopy(v.id);
    fs.closeSync(fs.openSync(part, 'wx'));
    return true;
  });
}

/**
 * The index source of a dataset opened with a cache: its verified copy (index-copy.ts; `source`, the index at the
 * dataset's location, is then closed) and the fallback its reader turns to when a page of the copy fails its check
 * later (damaged on disk after it was checked); else `source` itself. `location`: the dataset's URL, or its
 * absolute path (a network file system); `reopen` opens the index at the location again.
 */
export async function useIndexCopy(
  cache: Pick<CacheOptions, 'dir' | 'maxBytes' | 'onEvent'>,
  location: string,
  index: IndexFacts,
  source: ByteSource,
  reopen: () => ByteSource,
): Promise<{ source: ByteSource; fallback?: IndexFallback }> {
  const root = path.resolve(cache.dir);
  const place: IndexCopyPlace = { root, dir: path.join(root, datasetId(location, index.crc32c)), maxBytes: cache.maxBytes, ...(cache.onEvent === undefined ? {} : { onEvent: cache.onEvent }) };
  const from = isRemote(location) ? 'over http' : "from the dataset's directory";
  const copy = await openIndexCopy(place, index, () => source.read(0, index.bytes), from);
  if (copy === undefined) return { source };
  await source.close(); // an http source leaves the dataset's client open (it does not own it)
  const file = path.join(place.dir, indexCopyName(index.file, index.crc32c, index.bytes));
  const inode = fileInode(file);
  const fallback: IndexFallback = {
    open: reopen,
    dropped: () => {
      // this process's copy, unless another process has put a new one in its place meanwhile
      if (inode !== undefined && fileInode(file) === inode) removeCopy(file);
      place.onEvent?.({ type: 'corrupt', shard: index.file, reason: `a page of its copy in the cache fails its check (the copy is removed; pages are read ${from} from now on)` });
    },
  };
  return { source: copy, fallback };
}

function fileInode(file: string): number | undefined {
  try {
    return fs.statSync(file).ino;
  } catch {
    return undefined;
  }
}
