/**
 * What opening a dataset and first opening each shard check: options, the index against the manifest, and a
 * shard's size and fingerprint against the index's shard table. Each failure has its own code.
 */
import { crc32c, crc32cHex } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { TreeInfo } from '../../formats/btree-reader.js';
import { FINGERPRINT_BYTES, indexRemedy, type Layout, type ShardRecord } from '../../formats/index-layout.js';
import { MEMBER_COLUMNS, MemberColumn, RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import type { Manifest } from '../../formats/manifest.js';
import { checkPackedHeader, PACKED_HEADER_BYTES } from '../../formats/packed-layout.js';
import type { ByteSource, SyncByteSource } from '../io/byte-source.js';
import { expectIntegerInRange } from '../io/io-options.js';
import type { OpenDatasetOptions } from './dataset-options.js';
import type { IndexReader } from './index-reader.js';

/**
 * Size (one fstat for local files) and, with 'fingerprint', the CRC32C of the shard's first 4 KiB. Synchronous for
 * local sources (the getSync path opens shards synchronously); a promise for remote ones.
 */
export function checkShardOnOpen(source: ByteSource, record: ShardRecord, layout: Layout, mode: 'size' | 'fingerprint'): void | Promise<void> {
  const mismatch = (what: string): ShardkitError =>
    new ShardkitError(ErrorCodes.SHARD_MISMATCH, `${source.name}: ${what} differs from what the index recorded; the shard was replaced or damaged (run \`shardkit verify\`)`, { file: source.name, shard: record.file });
  const head = Math.min(record.bytes, FINGERPRINT_BYTES);
  const checkHead = (bytes: Uint8Array): void => {
    if (crc32c(bytes) !== record.fingerprint) throw mismatch('its fingerprint');
    if (layout === 'packed' && record.bytes >= PACKED_HEADER_BYTES) checkPackedHeader(bytes, source.name);
  };
  const sync = source as SyncByteSource;
  if (typeof sync.sizeSync === 'function') {
    const size = sync.sizeSync();
    if (size !== record.bytes) {
      throw size < record.bytes ? new ShardkitError(ErrorCodes.TRUNCATED, `${source.name}: shard is ${size} bytes, the index says ${record.bytes}`, { file: source.name }) : mismatch(`its size (${size} bytes)`);
    }
    if (mode === 'fingerprint') checkHead(sync.readSync(0, head));
    return;
  }
  if (mode === 'size') return;
  return source.read(0, head).then(checkHead);
}

export function checkOpenOptions(o: OpenDatasetOptions): void {
  const int = (name: string, v: unknown, min: number, max: number): void => {
    if (v !== undefined) expectIntegerInRange(name, v, min, max);
  };
  int('maxOpenShards', o.maxOpenShards, 1, 65_536);
  int('pageCacheBytes', o.pageCacheBytes, 0, Number.MAX_SAFE_INTEGER);
  int('maxMemberBytes', o.maxMemberBytes, 0, Number.MAX_SAFE_INTEGER);
  int('syncReadMaxBytes', o.syncReadMaxBytes, 0, 2 ** 31 - 1);
  if (o.verify !== undefined && typeof o.verify !== 'boolean') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a boolean for verify but received ${JSON.stringify(o.verify)}`);
  if (o.native !== undefined && typeof o.native !== 'boolean') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a boolean for native but received ${JSON.stringify(o.native)}`);
  if (o.cache !== undefined) {
    const c = o.cache as unknown;
    if (typeof c !== 'object' || c === null) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected an object { dir, maxBytes } for cache but received ${JSON.stringify(c)}`);
    const { dir, maxBytes, onEvent, policy } = c as Record<string, unknown>;
    if (policy !== undefined && policy !== 'clairvoyant' && policy !== 'lru') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected "clairvoyant" or "lru" for cache.policy but received ${JSON.stringify(policy)}`);
    if (typeof dir !== 'string' || dir === '') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a directory path for cache.dir but received ${JSON.stringify(dir)}`);
    expectIntegerInRange('cache.maxBytes', maxBytes, 1, Number.MAX_SAFE_INTEGER);
    if (onEvent !== undefined && typeof onEvent !== 'function') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a function for cache.onEvent but received ${typeof onEvent}`);
  }
  if (o.checkShards !== undefined && o.checkShards !== 'size' && o.checkShards !== 'fingerprint') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected "size" or "fingerprint" for checkShards but received ${JSON.stringify(o.checkShards)}`);
  }
}

export function checkIndexMatchesManifest(index: IndexReader, manifest: Manifest, location: string): void {
  const mismatch = (why: string): never => {
    throw new ShardkitError(ErrorCodes.INDEX_MISMATCH, `${location}: the index does not belong to this manifest (${why}); ${indexRemedy(manifest.layout)}`, { file: location });
  };
  if (crc32cHex(index.header.crc) !== manifest.index.crc32c) mismatch('header checksum differs');
  if (index.header.layout !== manifest.layout) mismatch('layout differs');
  if (index.header.entryCount !== manifest.totals.samples) mismatch('sample count differs');
  if (index.shards.length !== manifest.shards.length) mismatch('shard count differs');
  index.shards.forEach((s, i) => {
    const m = manifest.shards[i];
    if (m === undefined || m.file !== s.file || m.bytes !== s.bytes || m.samples !== s.samples || m.crc32c !== crc32cHex(s.crc32c)) mismatch(`shard ${i} differs`);
  });
}

/**
 * Dataset.checkEntry's checks on leaf record `slot`, from the leaf's columns: its span inside its shard, no member
 * over `maxMemberBytes`. False when one fails: the caller then runs checkEntry on the entry, which names the sample.
 */
export function recordFits(leaf: LeafPage, slot: number, shards: readonly ShardRecord[], maxMemberBytes: number): boolean {
  const r = slot * RECORD_COLUMNS;
  const rows = leaf.rows;
  const end = (rows[r + RecordColumn.offset] as number) + (rows[r + RecordColumn.length] as number);
  if (!(end <= (shards[rows[r + RecordColumn.shard] as number]?.bytes ?? -1))) return false;
  // a lone member's size is the span's length
  if ((rows[r + RecordColumn.loneCrc32c] as number) >= 0) return (rows[r + RecordColumn.length] as number) <= maxMemberBytes;
  const cols = leaf.memberRows;
  const first = (rows[r + RecordColumn.firstMember] as number) * MEMBER_COLUMNS;
  for (let q = first, last = first + (rows[r + RecordColumn.memberCount] as number) * MEMBER_COLUMNS; q < last; q += MEMBER_COLUMNS) {
    if ((cols[q + MemberColumn.size] as number) > maxMemberBytes) return false;
  }
  return true;
}

/**
 * The checks of {@link recordFits} on an entry, throwing: CORRUPT_INDEX for a span outside its shard (of the index
 * `tree`), TOO_LARGE for a member over `maxMemberBytes`; both name the sample.
 */
export function assertEntryFits(entry: IndexEntry, shards: readonly ShardRecord[], maxMemberBytes: number, tree: TreeInfo): void {
  const shard = shards[entry.shard];
  if (shard === undefined || entry.offset + entry.length > shard.bytes) {
    throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${tree.file}: sample "${entry.key}" points outside its shard; ${indexRemedy(tree.header.layout)}`, { key: entry.key });
  }
  for (const m of entry.members) {
    if (m.size > maxMemberBytes) {
      throw new ShardkitError(ErrorCodes.TOO_LARGE, `sample "${entry.key}" member "${m.ext}" is ${m.size} bytes, over maxMemberBytes ${maxMemberBytes} (raise openDataset's maxMemberBytes, or --max-member-bytes of get, extract or derive, for files that big)`, { key: entry.key });
    }
  }
}
