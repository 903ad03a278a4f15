/**
 * manifest.json: the dataset's commit point, written last. A directory without it is never opened as a dataset.
 * Deterministic: the same input and options give the same manifest bytes (no timestamps, no host names); how long
 * a pack took lives in pack-report.json beside it. Schema in formats/SPEC.md ("Manifest").
 */
import { ErrorCodes, ShardkitError } from './errors.js';
import { MAX_PAGE_SIZE, MIN_PAGE_SIZE, type Layout } from './index-layout.js';

export const MANIFEST_FILE = 'manifest.json';
/**
 * The manifest's `extra` field that says how file names were cut into keys, when not WebDataset's rule: `"path"` for
 * a pack with `--key-rule path` (key = the relative path without its last extension). Absent: WebDataset's rule.
 * `reindex` reads tar member names back with it.
 */
export const KEY_RULE_EXTRA = 'keyRule';

/** Recorded in the manifest's `extra` by `index` so `reindex` knows the shards follow the adoption rules (SPEC). */
export const ADOPTED_EXTRA_KEY = 'adopted';
export const MANIFEST_FORMAT = 'shardkit-dataset';
export const MANIFEST_VERSION = 1;

export interface ManifestShard {
  file: string;
  bytes: number;
  samples: number;
  /** CRC32C of the whole shard file, 8 hex digits. */
  crc32c: string;
}

export interface ManifestPass {
  name: string;
  params: Record<string, unknown>;
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  formatVersion: number;
  tool: { name: 'shardkit'; version: string };
  layout: Layout;
  compress: 'none' | 'lz4';
  index: { file: string; bytes: number; pageSize: number; crc32c: string };
  shards: ManifestShard[];
  totals: {
    samples: number;
    members: number;
    /** Original member bytes (what the samples hold). */
    bytes: number;
    /** Member bytes as stored (after compression). */
    storedBytes: number;
    /** Shard files on disk, headers and padding included. */
    shardBytes: number;
  };
  /** The passes that made the data, in order. */
  passes: ManifestPass[];
  /** Extra files in the dataset directory (e.g. classes.txt from tag=dirname). */
  files: string[];
  /** Samples left out by `--on-error skip`, with why. */
  skipped: { path: string; reason: string }[];
  /** Fields contributed by passes (e.g. `classes`). */
  extra: Record<string, unknown>;
  /** Of a dataset packed with `--part I/N`: which part it is (absent on whole datasets, merged ones included). */
  part?: ManifestPart;
  /** One record per `append`, oldest first (absent until the first append); the pack made the samples before them. */
  appends?: ManifestAppend[];
}

/** What one `append` brought: its samples, in shards `[shards[0], shards[1])` (shard numbers), made with `passes`. */
export interface ManifestAppend {
  samples: number;
  shards: [number, number];
  passes: ManifestPass[];
}

/** Part `index` (0-based) of `count`. */
export interface ManifestPart {
  index: number;
  count: number;
}

const HEX8 = /^[0-9a-f]{8}$/;
/** Shard and extra file names: plain relative names inside the dataset directory. */
const SAFE_NAME = /^(?!\.{1,2}$)[^/\\\0]+$/;

/** Parses and checks manifest.json; any deviation is BAD_MANIFEST (or UNSUPPORTED_VERSION) naming the field. */
export function parseManifest(text: string, file: string): Manifest {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (cause) {
    throw new ShardkitError(ErrorCodes.BAD_MANIFEST, `${file}: not valid JSON`, { file, cause });
  }
  const bad = (field: string, why: string): never => {
    throw new ShardkitError(ErrorCodes.BAD_MANIFEST, `${file}: ${field} ${why}`, { file });
  };
  if (!isObject(doc)) return bad('document', 'is not an object');
  if (doc.format !== MANIFEST_FORMAT) bad('format', `is not "${MANIFEST_FORMAT}"`);
  const version = doc.formatVersion;
  if (!isCount(version) || version < 1) return bad('formatVersion', 'is not a positive integer');
  if (version > MANIFEST_VERSION) {
    throw new ShardkitError(ErrorCodes.UNSUPPORTED_VERSION, `${file}: dataset format version ${version} is newer than this shardkit reads (${MANIFEST_VERSION}); upgrade shardkit`, { file });
  }
  if (doc.layout !== 'tar' && doc.layout !== 'packed') bad('layout', 'is not "tar" or "packed"');
  if (doc.compress !== 'none' && doc.compress !== 'lz4') bad('compress', 'is not "none" or "lz4"');
  const tool = doc.tool;
  if (!isObject(tool) || tool.name !== 'shardkit' || typeof tool.version !== 'string') bad('tool', 'is malformed');
  const index = doc.index;
  if (!isObject(index) || typeof index.file !== 'string' || !SAFE_NAME.test(index.file) || !isCount(index.bytes) || !isCount(index.pageSize) || typeof index.crc32c !== 'string' || !HEX8.test(index.crc32c)) {
    bad('index', 'is malformed');
  }
  const pageSize = (index as Manifest['index']).pageSize;
  if ((pageSize & (pageSize - 1)) !== 0 || pageSize < MIN_PAGE_SIZE || pageSize > MAX_PAGE_SIZE) bad('index.pageSize', `is not a power of two between ${MIN_PAGE_SIZE} and ${MAX_PAGE_SIZE}`);
  if (!Array.isArray(doc.shards)) return bad('shards', 'is not an array');
  doc.shards.forEach((s: unknown, i: number) => {
    if (!isObject(s) || typeof s.file !== 'string' || !SAFE_NAME.test(s.file) || !isCount(s.bytes) || !isCount(s.samples) || typeof s.crc32c !== 'string' || !HEX8.test(s.crc32c)) {
      bad(`shards[${i}]`, 'is malformed');
    }
  });
  const totals = doc.totals;
  if (!isObject(totals) || !['samples', 'members', 'bytes', 'storedBytes', 'shardBytes'].every((k) => isCount(totals[k]))) bad('totals', 'is malformed');
  const shards = doc.shards as ManifestShard[];
  const t = totals as Manifest['totals'];
  if (shards.reduce((n, s) => n + s.samples, 0) !== t.samples) bad('totals.samples', 'does not equal the sum over shards');
  if (shards.reduce((n, s) => n + s.bytes, 0) !== t.shardBytes) bad('totals.shardBytes', 'does not equal the sum over shards');
  if (new Set(shards.map((s) => s.file)).size !== shards.length) bad('shards', 'names a file twice');
  if (!Array.isArray(doc.passes) || !doc.passes.every((p: unknown) => isObject(p) && typeof p.name === 'string' && isObject(p.params))) bad('passes', 'is malformed');
  if (!Array.isArray(doc.files) || !doc.files.every((f: unknown) => typeof f === 'string' && SAFE_NAME.test(f))) bad('files', 'is malformed');
  if (!Array.isArray(doc.skipped) || !doc.skipped.every((s: unknown) => isObject(s) && typeof s.path === 'string' && typeof s.reason === 'string')) bad('skipped', 'is malformed');
  // one name, one file: a shard or extra file named like the index or the manifest (or another of them) would be
  // written over the other by merge, reindex or a pass
  const names = [MANIFEST_FILE, (index as Manifest['index']).file, ...shards.map((s) => s.file), ...(doc.files as string[])];
  if (new Set(names).size !== names.length) bad('files', 'name the manifest, the index or a shard, or one file twice');
  if (!isObject(doc.extra)) bad('extra', 'is not an object');
  const part = doc.part;
  if (part !== undefined && (!isObject(part) || !isCount(part.index) || !isCount(part.count) || part.index >= part.count)) bad('part', 'is malformed');
  if (doc.appends !== undefined) checkAppends(doc.appends, shards, t.samples, bad);
  return doc as unknown as Manifest;
}

/**
 * `appends`: records in shard order, each range inside the shard list and after the previous one, each `samples` the
 * sum over its shards.
 */
function checkAppends(appends: unknown, shards: readonly ManifestShard[], total: number, bad: (field: string, why: string) => never): void {
  if (!Array.isArray(appends)) bad('appends', 'is not an array');
  let end = 0;
  let samples = 0;
  (appends as unknown[]).forEach((a, i) => {
    const field = `appends[${i}]`;
    if (!isObject(a) || !isCount(a.samples) || !Array.isArray(a.shards) || a.shards.length !== 2 || !a.shards.every(isCount)) return bad(field, 'is malformed');
    if (!Array.isArray(a.passes) || !a.passes.every((p: unknown) => isObject(p) && typeof p.name === 'string' && isObject(p.params))) return bad(`${field}.passes`, 'is malformed');
    const [first, last] = a.shards as [number, number];
    if (first < end || last < first || last > shards.length) return bad(`${field}.shards`, `is not a range of shard numbers after the previous append's, within the ${shards.length} shards`);
    const inShards = shards.slice(first, last).reduce((n, s) => n + s.samples, 0);
    if (a.samples !== inShards) return bad(`${field}.samples`, `does not equal the samples of its shards (${inShards})`);
    end = last;
    samples += a.samples;
  });
  if (samples > total) bad('appends', 'count more samples than totals.samples');
}

/** Stable serialization: the writer's key order, two-space indent, trailing newline. */
export function serializeManifest(m: Manifest): string {
  return `${JSON.stringify(m, null, 2)}\n`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
