/** What the bench needs to know about the two copies of the data before it times anything. */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { memberPath } from '../../formats/sample.js';
import type { Dataset } from '../read/dataset.js';

/** The dataset's samples in key order: what both sides read, and what the epoch order is computed from. */
export interface SampleList {
  keys: string[];
  exts: string[][];
  /** Sum of each sample's member sizes (decompressed), same order as keys: the payload the loader delivers. */
  sampleBytes: number[];
  shardSizes: number[];
}

export async function listSamples(ds: Dataset): Promise<SampleList> {
  const keys: string[] = [];
  const exts: string[][] = [];
  const sampleBytes: number[] = [];
  for await (const e of ds.entries()) {
    keys.push(e.key);
    exts.push(e.members.map((m) => m.ext));
    sampleBytes.push(e.members.reduce((n, m) => n + m.size, 0));
  }
  return { keys, exts, sampleBytes, shardSizes: ds.shards.map((s) => s.samples) };
}

export interface RawFacts {
  files: number;
  bytes: number;
  /** st_blocks x 512 summed: what the files occupy on disk. */
  allocatedBytes: number;
  /** A few files spread over the list, for page-cache residency checks. */
  probeFiles: string[];
}

const PROBE_FILES = 32;
const BYTES_PER_BLOCK = 512;

/**
 * Stats every raw file the bench will read (`rawDir/key.ext` for every member of every sample). A missing file
 * means rawDir is not the source the dataset was packed from, or that the dataset's passes (named in `passes`)
 * added or renamed members: INPUT, naming the file and which of the two it is.
 */
export function rawFileFacts(rawDir: string, list: SampleList, passes: readonly string[] = []): RawFacts {
  let files = 0;
  let bytes = 0;
  let allocatedBytes = 0;
  const all: string[] = [];
  list.keys.forEach((key, i) => {
    for (const ext of list.exts[i] ?? []) {
      const file = path.join(rawDir, memberPath(key, ext));
      let st: fs.Stats;
      try {
        st = fs.statSync(file);
      } catch (err) {
        const why =
          passes.length === 0
            ? 'bench reads the raw files the dataset was packed from; pass that source directory as <raw-dir>'
            : `the dataset was made with passes (${passes.join(', ')}), which changed its members, and bench reads each ` +
              'member from <raw-dir> as key.ext: bench a dataset packed from <raw-dir> without passes (`shardkit pack <raw-dir> --out DIR`)';
        throw new ShardkitError(ErrorCodes.INPUT, `${file} (member "${ext}" of sample "${key}") is missing: ${why}`, { file, key, cause: err });
      }
      files++;
      bytes += st.size;
      allocatedBytes += st.blocks * BYTES_PER_BLOCK;
      if (all.length < PROBE_FILES * 64) all.push(file);
    }
  });
  const step = Math.max(1, Math.floor(all.length / PROBE_FILES));
  const probeFiles = all.filter((_, i) => i % step === 0).slice(0, PROBE_FILES);
  return { files, bytes, allocatedBytes, probeFiles };
}

/** The file system type a path is on, from /proc/mounts (longest matching mount point); 'unknown' elsewhere. */
export function filesystemOf(p: string): string {
  let mounts: string;
  try {
    mounts = fs.readFileSync('/proc/mounts', 'utf8');
  } catch {
    return 'unknown';
  }
  const real = fs.realpathSync(p);
  let best = { dir: '', type: 'unknown' };
  for (const line of mounts.split('\n')) {
    const [, dir, type] = line.split(' ');
    if (dir === undefined || type === undefined) continue;
    const inside = real === dir || real.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
    if (inside && dir.length > best.dir.length) best = { dir, type };
  }
  return best.type;
}

/** Size of every regular file under dir (the LMDB environment). */
export function directoryBytes(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += directoryBytes(p);
    else if (e.isFile()) total += fs.statSync(p).size;
  }
  return total;
}
