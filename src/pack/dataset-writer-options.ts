/** DatasetWriter's options: what each means, their defaults, and the checks a writer runs on them first. */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { DEFAULT_PAGE_SIZE, validatePageSize, type Layout, type ShardRecord } from '../../formats/index-layout.js';
import type { ManifestPart, ManifestPass } from '../../formats/manifest.js';
import { PACKED_HEADER_BYTES } from '../../formats/packed-layout.js';
import { KEY_RULES, type KeyRule } from '../../formats/sample.js';
import { TAR_END_BYTES } from '../../formats/tar-header.js';
import { expectLocalPath } from '../io/location.js';

export const DEFAULT_SHARD_BYTES = 1024 ** 3;

export interface DatasetWriterOptions {
  /** Output directory (created when missing). */
  dir: string;
  layout?: Layout;
  /**
   * How the samples' keys were cut from file names (see KeyRule): 'path' lets tar keys hold dots (their names split at
   * the last dot) and is recorded in the manifest's `extra.keyRule`. Default 'webdataset'.
   */
  keyRule?: KeyRule;
  compress?: 'none' | 'lz4';
  /** Shard byte budget; a shard exceeds it only when one sample alone does. Default 1 GiB. */
  shardBytes?: number;
  /** Index page size, a power of two in [1 KiB, 64 KiB]. Default 4 KiB. */
  pageSize?: number;
  /** Shard file name prefix (default `shard-`); parts of a partitioned pack use their own. */
  shardPrefix?: string;
  /**
   * The number in the first shard's name (default 0): `append` writes its shards under the numbers that follow the
   * dataset's last one. Shard numbers inside this writer's own index still start at 0.
   */
  firstShard?: number;
  /** Which part of a partitioned pack this is, recorded in the manifest so `merge` can check it has every part. */
  part?: ManifestPart;
  /** Passes recorded in the manifest. */
  passes?: ManifestPass[];
  /** Continue an interrupted write in `dir` (same options required). */
  resume?: boolean;
  /**
   * What else decides which samples are written, kept in the resume journal with the writer's own options: a
   * resume with other values is refused (pack: the walk's filters, as its cursor counts the samples they let through).
   */
  resumeOptions?: Record<string, unknown>;
  /**
   * A digest of what the passes' prepare() found in the input (tag=dirname's class list), kept in the resume journal:
   * a resume whose input gives another is refused with INPUT_CHANGED (samples already written used the old one).
   */
  preparedDigest?: string;
  /**
   * What identifies the dataset a derive reads (its index's CRC32C), kept in the resume journal: a resume from
   * another one is refused with INPUT_CHANGED (samples already written came from the old one).
   */
  sourceDigest?: string;
  /** Replace a dataset or interrupted write already in `dir`. */
  force?: boolean;
  /** fsync shards and index before the manifest is written (survives power loss, costs time). */
  sync?: boolean;
  /** What the directory's lock names as its writer (`pack`, `derive`), for the message another writer gets. */
  command?: string;
  /** Index entries held in memory before spilling a sorted run (bounds memory). */
  runEntries?: number;
  /**
   * Build the index while writing, for as long as samples come in key order (default true: a pack's walk gives
   * that order, so the index is ready when the last shard is, and no entry goes to a run file). false always
   * builds it at the end from the runs.
   */
  liveIndex?: boolean;
  onShard?: (shard: ShardRecord) => void;
}

export interface WriterStats {
  samples: number;
  members: number;
  originalBytes: number;
  storedBytes: number;
  shards: number;
  /** Samples larger than the shard budget, each written alone in its own shard. */
  oversizeSamples: number;
}

export interface ValidOptions {
  dir: string;
  layout: Layout;
  keyRule: KeyRule;
  compress: 'none' | 'lz4';
  shardBytes: number;
  pageSize: number;
  shardPrefix: string;
  firstShard: number;
  passes: ManifestPass[];
  sync: boolean;
  runEntries: number;
  part: ManifestPart | undefined;
  command: string;
}

export function validateOptions(o: DatasetWriterOptions): ValidOptions {
  const bad = (what: string, expected: string, got: unknown): never => {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected ${expected} for ${what} but received ${JSON.stringify(got)} of type ${typeof got}`);
  };
  if (typeof o.dir !== 'string' || o.dir === '') bad('dir', 'a directory path', o.dir);
  expectLocalPath('--out', o.dir);
  const layout = o.layout ?? 'tar';
  if (layout !== 'tar' && layout !== 'packed') bad('layout', '"tar" or "packed"', layout);
  const compress = o.compress ?? 'none';
  if (compress !== 'none' && compress !== 'lz4') bad('compress', '"none" or "lz4"', compress);
  const minShard = (layout === 'tar' ? TAR_END_BYTES : PACKED_HEADER_BYTES) + 1;
  const shardBytes = o.shardBytes ?? DEFAULT_SHARD_BYTES;
  if (!Number.isSafeInteger(shardBytes) || shardBytes < minShard) bad('shardBytes', `an integer of at least ${minShard}`, shardBytes);
  const pageSize = o.pageSize ?? DEFAULT_PAGE_SIZE;
  validatePageSize(pageSize);
  const shardPrefix = o.shardPrefix ?? 'shard-';
  if (!/^[A-Za-z0-9._-]*$/.test(shardPrefix)) bad('shardPrefix', 'letters, digits, ".", "_" or "-"', shardPrefix);
  const firstShard = o.firstShard ?? 0;
  if (!Number.isSafeInteger(firstShard) || firstShard < 0) bad('firstShard', 'a non-negative integer', firstShard);
  const runEntries = o.runEntries ?? 100_000;
  if (!Number.isSafeInteger(runEntries) || runEntries < 1) bad('runEntries', 'a positive integer', runEntries);
  const part = o.part;
  if (part !== undefined && !(Number.isSafeInteger(part.count) && part.count >= 1 && Number.isSafeInteger(part.index) && part.index >= 0 && part.index < part.count)) {
    bad('part', '{ index, count } with 0 <= index < count', part);
  }
  const keyRule = o.keyRule ?? 'webdataset';
  if (!KEY_RULES.includes(keyRule)) bad('keyRule', KEY_RULES.map((r) => `"${r}"`).join(' or '), keyRule);
  return { dir: o.dir, layout, keyRule, compress, shardBytes, pageSize, shardPrefix, firstShard, passes: o.passes ?? [], sync: o.sync ?? false, runEntries, part, command: o.command ?? 'pack' };
}
