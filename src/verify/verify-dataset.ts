/**
 * `shardkit verify`: proves a dataset is intact, or names what is not.
 *
 * Full check: the manifest against the index (counts, byte totals, shard table) and its extra files, every index
 * invariant ({@link checkIndex}), then every shard streamed once, sequentially: its size, fingerprint and whole-file
 * CRC32C, each sample's members decompressed and checked against their CRC32C, and in the tar layout each member's
 * tar header (name and size) against the index. Quick check (`quick: true`): the manifest and its extra files, the
 * index invariants, and each shard's size and fingerprint; no member is read. Damage inside a sample is reported
 * with its key; damage the index cannot place (a shard's padding or end blocks) is reported against the shard. A
 * shard that cannot be read (EIO, a directory) is a problem of its own, and the shards after it are still checked.
 */
import { isHttpDeadline } from '../io/http-client.js';
import { MemberStream, maxGatheredSpanBytes, verifyChunkBytes } from './member-stream.js';
import { crc32c, crc32cHex } from '../../formats/checksum.js';
import { crc32cSpan } from '../../formats/crc32c-span.js';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import { FINGERPRINT_BYTES, HEADER_BYTES, decodeIndexHeader, decodeShardTable, indexRemedy, type IndexHeader, type ShardRecord } from '../../formats/index-layout.js';
import { lz4DecompressMember } from '../../formats/lz4.js';
import { MANIFEST_FILE, type Manifest } from '../../formats/manifest.js';
import { checkPackedHeader, PACKED_HEADER_BYTES } from '../../formats/packed-layout.js';
import { memberPath } from '../../formats/sample.js';
import { LZ4_NAME_SUFFIX } from '../../formats/sample-layout.js';
import { TarType } from '../../formats/tar-header.js';
import { TarScanner } from '../../formats/tar-scan.js';
import type { ByteSource } from '../io/byte-source.js';
import { HttpClient, type HttpClientOptions } from '../io/http-client.js';
import { isRemote, redactLocation, resolveLocation } from '../io/location.js';
import { openByteSource } from '../io/open-source.js';
import { normalizedName } from '../adopt/member-rules.js';
import { checkExtraFiles } from './check-files.js';
import { checkShardIndex } from './check-shard-index.js';
import { readManifest } from './read-manifest.js';
import { VerifyCache, type VerifyCacheReport } from './verify-cache.js';
import type { CacheOptions } from '../cache/shard-cache.js';
import { adviseAroundDamagedShards } from './shard-remedy.js';
import { PageReader, checkIndex, overlappingSpans, type SpanTable } from './check-index.js';

export const VERIFY_CHUNK_BYTES = 8 << 20;
const DEFAULT_MAX_REPORTED = 10_000;

export interface VerifyOptions {
  /** Structure and sizes only: index invariants, shard sizes and fingerprints; no member is read. */
  quick?: boolean;
  onProgress?: (p: VerifyProgress) => void;
  /** Damaged samples listed in the report at most (all are counted). Default 10,000. */
  maxReported?: number;
  /** For a dataset behind an http(s) URL: the HTTP client's options (headers, retries, `sign` for presigned URLs). */
  http?: HttpClientOptions;
  /**
   * A node-local shard cache to fill on the way (full check only): verify still reads every shard from the source,
   * and copies each one that matches the index into the cache, so a training run after it starts warm
   * (verify-cache.ts says why it never verifies a cached copy instead of the source).
   */
  cache?: CacheOptions;
}

export interface VerifyProgress {
  phase: 'index' | 'shards';
  done: number;
  total: number;
}

export interface DamagedSample {
  key: string;
  shard: string;
  /** Byte offset in the shard of the damaged member (or of the span). */
  offset: number;
  what: string;
}

export interface VerifyProblem {
  file: string;
  what: string;
}

export interface VerifyReport {
  ok: boolean;
  quick: boolean;
  location: string;
  checked: { pages: number; samples: number; members: number; shards: number; shardBytes: number; memberBytes: number };
  /** Damaged samples, in shard order (at most `maxReported`). */
  damaged: DamagedSample[];
  damagedCount: number;
  /** Problems not tied to one sample: manifest, index structure, missing or changed shards. */
  problems: VerifyProblem[];
  /** With the `cache` option: what was copied into it, and verified copies that can replace damaged shards. */
  cache?: VerifyCacheReport & { repairFrom: { shard: string; copy: string }[] };
}

/** Verifies the dataset at `location` (directory or http(s) URL). Throws only when there is nothing to check. */
export async function verifyDataset(location: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const quick = options.quick ?? false;
  const maxReported = options.maxReported ?? DEFAULT_MAX_REPORTED;
  if (!Number.isSafeInteger(maxReported) || maxReported < 0) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a non-negative integer for maxReported but received ${String(maxReported)}`);
  }
  if (options.cache !== undefined && quick) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, 'a cache is filled by a full verify (it copies the shards it streams); a quick verify reads no shard: drop --quick or the cache');
  }
  // one client for the manifest, the index and every shard: their requests share kept-alive connections
  const client = isRemote(location) ? new HttpClient(options.http) : undefined;
  try {
    return await verifyWith(location, client === undefined ? {} : { client }, quick, maxReported, options.onProgress, options.cache);
  } finally {
    client?.close();
  }
}

/** How verify opens the dataset's files: with the dataset's HTTP client when it is remote. */
export interface Opener {
  client?: HttpClient;
}

async function verifyWith(location: string, opener: Opener, quick: boolean, maxReported: number, onProgress: VerifyOptions['onProgress'], cacheOptions: CacheOptions | undefined): Promise<VerifyReport> {
  const shown = redactLocation(location);
  const manifest = await readManifest(location, opener);
  const report: VerifyReport = {
    ok: false,
    quick,
    location: shown,
    checked: { pages: 0, samples: 0, members: 0, shards: 0, shardBytes: 0, memberBytes: 0 },
    damaged: [],
    damagedCount: 0,
    problems: [],
  };
  const indexName = manifest.index.file;
  const problem = (file: string, what: string): void => void report.problems.push({ file, what });
  const damage = (d: DamagedSample): void => {
    report.damagedCount++;
    if (report.damaged.length < maxReported) report.damaged.push(d);
  };

  const opened = await openIndex(location, opener, manifest, problem);
  let shards: ShardRecord[] | undefined = opened?.shards;
  let spans: SpanTable | undefined;
  let pages: PageReader | undefined;
  let cache: VerifyCache | undefined;
  try {
    if (opened !== undefined) {
      pages = new PageReader(opened.source, opened.header);
      const result = await checkIndex(pages, opened.header, opened.shards, (done, total) => onProgress?.({ phase: 'index', done, total }));
      report.checked.pages = result.pages;
      report.checked.samples = result.samples;
      report.checked.members = result.members;
      spans = result.spans;
      for (const p of result.problems) {
        if (p.key !== undefined) damage({ key: p.key, shard: opened.shards[p.shard ?? -1]?.file ?? `#${p.shard}`, offset: p.offset ?? 0, what: p.what });
        else problem(indexName, p.what);
      }
      // with samples missing from the tree, its sums differ for a reason already reported
      if (result.samples === opened.header.entryCount) {
        const { totals } = manifest;
        if (result.memberBytes !== totals.bytes) problem(MANIFEST_FILE, `totals.bytes is ${totals.bytes}, the index's members hold ${result.memberBytes}`);
        if (result.storedBytes !== totals.storedBytes) problem(MANIFEST_FILE, `totals.storedBytes is ${totals.storedBytes}, the index's members are stored in ${result.storedBytes}`);
      }
    }
    await checkExtraFiles(location, manifest.files, opener, problem);
    await checkShardIndex(location, manifest, opener, problem);
    // without a usable index, the manifest still says what each shard should be (size and CRC32C)
    shards ??= manifest.shards.map((s) => ({ file: s.file, bytes: s.bytes, samples: s.samples, crc32c: Number.parseInt(s.crc32c, 16), fingerprint: -1 }));
    if (cacheOptions !== undefined) cache = VerifyCache.open(cacheOptions, location, manifest.index.crc32c, shards);
    const repairFrom: { shard: string; copy: string }[] = [];
    const byShard = spans?.byShard(shards.length);
    const skip = new Set<number>();
    if (spans !== undefined && byShard !== undefined && pages !== undefined) {
      for (const [i, positions] of byShard.entries()) {
        for (const [before, p] of overlappingSpans(spans, positions)) {
          const e = await pages.entry(spans, p);
          const other = await pages.entry(spans, before);
          damage({ key: e.key, shard: shards[i]!.file, offset: e.offset, what: `span overlaps sample ${JSON.stringify(other.key)}` });
          skip.add(p);
        }
      }
    }
    const total = quick ? shards.length : shards.reduce((n, s) => n + s.bytes, 0);
    // shards whose bytes are not what the manifest recorded (missing, unreadable, another size or CRC32C)
    const changedShards = new Set<string>();
    const changed = (file: string): void => void changedShards.add(file);
    let done = 0;
    for (const [i, record] of shards.entries()) {
      const manifestShard = manifest.shards[i];
      const ctx: ShardContext = { location, opener, manifest, record, manifestShard, changed, problem, damage, spans, pages, skip, positions: byShard?.[i] ?? new Uint32Array(0), index: i, cache };
      if (manifestShard !== undefined && manifestShard.file !== record.file) problem(record.file, `the manifest names this shard ${manifestShard.file}`);
      const checked = quick ? await quickShard(ctx) : await fullShard(ctx, (n) => onProgress?.({ phase: 'shards', done: done + n, total }));
      done += quick ? 1 : record.bytes;
      onProgress?.({ phase: 'shards', done, total });
      if (checked) {
        report.checked.shards++;
        report.checked.shardBytes += record.bytes;
      }
      report.checked.memberBytes += ctx.memberBytes ?? 0;
      if (cache !== undefined && changedShards.has(record.file)) {
        const copy = await cache.verifiedCopy(i);
        if (copy !== undefined) repairFrom.push({ shard: record.file, copy });
      }
    }
    adviseAroundDamagedShards(report, [...changedShards]);
    if (cache !== undefined) report.cache = { ...cache.report, repairFrom };
  } finally {
    await opened?.source.close();
    await cache?.close();
  }
  report.ok = report.problems.length === 0 && report.damagedCount === 0;
  return report;
}

interface OpenedIndex {
  source: ByteSource;
  header: IndexHeader;
  shards: ShardRecord[];
}

/** Opens and decodes the index header and shard table, reporting (not throwing) what is wrong with them. */
async function openIndex(location: string, opener: Opener, manifest: Manifest, problem: (file: string, what: string) => void): Promise<OpenedIndex | undefined> {
  const name = manifest.index.file;
  let source: ByteSource;
  try {
    source = await openByteSource(resolveLocation(location, name), opener);
  } catch (err) {
    if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
    problem(name, err.code === ErrorCodes.SHARD_MISSING ? `the index file is missing; ${indexRemedy(manifest.layout)}` : err.message);
    return undefined;
  }
  try {
    const size = await source.size();
    if (size !== manifest.index.bytes) problem(name, `is ${size} bytes, the manifest says ${manifest.index.bytes}`);
    const header = decodeIndexHeader(await source.read(0, Math.min(size, HEADER_BYTES)), name, size);
    const shards = decodeShardTable(await source.read(header.tableOffset, header.tableLength), header, name);
    // the rest of page 0 is covered by no checksum: it must be zero
    const page0 = await source.read(0, Math.min(size, header.pageSize));
    if (page0.subarray(HEADER_BYTES).some((b) => b !== 0)) problem(name, `page 0 has non-zero bytes after its ${HEADER_BYTES}-byte header`);
    if (crc32cHex(header.crc) !== manifest.index.crc32c) problem(name, `does not belong to this manifest (header checksum differs); ${indexRemedy(manifest.layout)}`);
    if (header.layout !== manifest.layout) problem(name, `says layout ${header.layout}, the manifest ${manifest.layout}`);
    if (header.entryCount !== manifest.totals.samples) problem(name, `holds ${header.entryCount} samples, the manifest says ${manifest.totals.samples}`);
    if (header.memberCount !== manifest.totals.members) problem(name, `holds ${header.memberCount} members, the manifest says ${manifest.totals.members}`);
    if (header.pageSize !== manifest.index.pageSize) problem(name, `has ${header.pageSize}-byte pages, the manifest says ${manifest.index.pageSize}`);
    if (shards.length !== manifest.shards.length) problem(name, `lists ${shards.length} shards, the manifest ${manifest.shards.length}`);
    shards.forEach((s, i) => {
      const m = manifest.shards[i];
      if (m !== undefined && (m.file !== s.file || m.bytes !== s.bytes || m.samples !== s.samples || m.crc32c !== crc32cHex(s.crc32c))) {
        problem(name, `shard ${i} (${s.file}, ${s.bytes} bytes) differs from the manifest's (${m.file}, ${m.bytes} bytes)`);
      }
    });
    return { source, header, shards };
  } catch (err) {
    await source.close();
    if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
    problem(name, err.message);
    return undefined;
  }
}

interface ShardContext {
  location: string;
  opener: Opener;
  manifest: Manifest;
  record: ShardRecord;
  /** What the manifest recorded for this shard, and where to note that its bytes differ from it. */
  manifestShard: Manifest['shards'][number] | undefined;
  changed: (file: string) => void;
  positions: Uint32Array;
  spans: SpanTable | undefined;
  pages: PageReader | undefined;
  skip: Set<number>;
  problem: (file: string, what: string) => void;
  damage: (d: DamagedSample) => void;
  memberBytes?: number;
  /** The shard's position in the shard table. */
  index: number;
  /** The cache to copy an intact shard into as it is streamed. */
  cache: VerifyCache | undefined;
}

async function openShard(ctx: ShardContext): Promise<{ source: ByteSource; size: number } | undefined> {
  const { record } = ctx;
  const unreadable = (err: unknown): undefined => {
    if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
    ctx.changed(record.file);
    ctx.problem(record.file, err.code === ErrorCodes.SHARD_MISSING ? `missing: its ${record.samples} samples cannot be read` : err.message);
    return undefined;
  };
  let source: ByteSource;
  try {
    source = await openByteSource(resolveLocation(ctx.location, record.file), ctx.opener);
  } catch (err) {
    return unreadable(err);
  }
  let size: number;
  try {
    // over http the first request goes out here: a missing shard is found now, not at open
    size = await source.size();
  } catch (err) {
    await source.close();
    return unreadable(err);
  }
  if (size !== record.bytes) ctx.problem(record.file, `is ${size} bytes, the index says ${record.bytes}${size < record.bytes ? ' (truncated)' : ''}`);
  if (ctx.manifestShard !== undefined && size !== ctx.manifestShard.bytes) ctx.changed(record.file);
  return { source, size };
}

/**
 * Reads `length` bytes at `offset` of an opened shard, or reports why it cannot and returns undefined: one bad
 * disk sector or unreadable file must not keep the other shards from being checked.
 */
async function readShard(ctx: ShardContext, source: ByteSource, offset: number, length: number, unchecked: string): Promise<Uint8Array | undefined> {
  try {
    return await source.read(offset, length);
  } catch (err) {
    if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
    ctx.problem(ctx.record.file, `${err.message}; ${unchecked} not checked`);
    return undefined;
  }
}

/** Size, fingerprint and (packed) shard header. */
async function quickShard(ctx: ShardContext): Promise<boolean> {
  const opened = await openShard(ctx);
  if (opened === undefined) return false;
  try {
    const head = await readShard(ctx, opened.source, 0, Math.min(opened.size, FINGERPRINT_BYTES), 'its fingerprint was');
    if (head === undefined) return false;
    checkHead(ctx, head, opened.size);
  } finally {
    await opened.source.close();
  }
  return true;
}

function checkHead(ctx: ShardContext, head: Uint8Array, size: number): void {
  const { record } = ctx;
  if (record.fingerprint >= 0 && size === record.bytes && crc32c(head) !== record.fingerprint) {
    ctx.problem(record.file, 'its first 4 KiB differ from what the index recorded (fingerprint); the shard was replaced or damaged');
  }
  if (ctx.manifest.layout === 'packed') {
    try {
      checkPackedHeader(head.subarray(0, PACKED_HEADER_BYTES), record.file);
    } catch (err) {
      if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
      ctx.problem(record.file, err.message);
    }
  }
}

/** Streams one shard: whole-file checksums, every sample's members, every member's tar header. */
async function fullShard(ctx: ShardContext, onBytes: (n: number) => void): Promise<boolean> {
  const opened = await openShard(ctx);
  if (opened === undefined) return false;
  const { record, spans, pages } = ctx;
  const { source, size } = opened;
  const tar = ctx.manifest.layout === 'tar';
  const expected = ctx.skip.size === 0 ? ctx.positions : ctx.positions.filter((p) => !ctx.skip.has(p));
  // tar entries the scanner has read ahead of the samples being checked: data offset -> name and size
  const headers = new Map<number, { name: string | undefined; size: number }>();
  let scanError: { message: string; at: number; reported: boolean } | undefined;
  const scanner = tar
    ? new TarScanner(record.file, {
        onEntry: (e) => {
          if (e.type === TarType.file || e.type === TarType.oldFile || e.type === TarType.contiguous) headers.set(e.dataOffset, { name: e.name, size: e.size });
        },
      })
    : undefined;
  let next = 0;
  let spanBuf: Uint8Array | undefined;
  /** A span too long to gather, checked as it streams past (see member-stream.ts). */
  let streamed: MemberStream | undefined;
  let streamedEntry: IndexEntry | undefined;
  const maxGathered = maxGatheredSpanBytes();
  const chunkBytes = verifyChunkBytes(VERIFY_CHUNK_BYTES);
  let crc = 0;
  let head: Uint8Array = new Uint8Array(0);
  let memberBytes = 0;
  // a copy for the cache, kept only if the streamed bytes turn out to be the shard the index describes
  const copy = ctx.cache !== undefined && size === record.bytes ? await ctx.cache.start(ctx.index) : undefined;
  let copied = false;

  const checkEntry = async (position: number, span: Uint8Array): Promise<void> => {
    const entry = await (pages as PageReader).entry(spans as SpanTable, position);
    for (const m of entry.members) {
      const at = entry.offset + m.offset;
      const bad = (what: string): void => ctx.damage({ key: entry.key, shard: record.file, offset: at, what: `member "${m.ext}": ${what}` });
      if (scanner !== undefined) checkTarHeader(entry, m.ext, m.storedSize, at, m.codec === Codec.lz4, bad);
      const stored = span.subarray(m.offset, m.offset + m.storedSize);
      let bytes: Uint8Array;
      try {
        bytes = m.codec === Codec.lz4 ? lz4DecompressMember(stored, m.size, `${record.file} byte ${at}`) : stored;
      } catch (err) {
        if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
        bad(err.message);
        continue;
      }
      memberBytes += m.size;
      if (crc32c(bytes) !== m.crc32c) bad(`checksum mismatch (CRC32C ${crc32cHex(crc32c(bytes))}, the index says ${crc32cHex(m.crc32c)})`);
    }
  };

  const checkTarHeader = (entry: IndexEntry, ext: string, storedSize: number, at: number, lz4: boolean, bad: (what: string) => void): void => {
    const h = headers.get(at);
    if (h === undefined) {
      if (scanError === undefined) bad(`no tar header ends at byte ${at}`);
      else if (!scanError.reported && at > scanError.at) {
        scanError.reported = true;
        bad(`tar header damaged: ${scanError.message}`);
      }
      return;
    }
    const want = memberPath(entry.key, ext) + (lz4 ? LZ4_NAME_SUFFIX : '');
    const got = h.name === undefined ? undefined : normalizedName(h.name);
    if (got !== want) bad(`tar header names ${JSON.stringify(got ?? '(not UTF-8)')}, the index says ${JSON.stringify(want)}`);
    if (h.size !== storedSize) bad(`tar header says ${h.size} bytes, the index says ${storedSize}`);
  };

  try {
    let pos = 0;
    while (pos < size) {
      const left = expected.length - next;
      const chunk = await readShard(ctx, source, pos, Math.min(chunkBytes, size - pos), `the shard from byte ${pos} on (${left} sample${left === 1 ? '' : 's'}) was`);
      if (chunk === undefined) {
        ctx.memberBytes = memberBytes;
        return false;
      }
      const end = pos + chunk.length;
      crc = crc32c(chunk, crc);
      await copy?.write(chunk);
      if (pos < FINGERPRINT_BYTES) head = concat(head, chunk.subarray(0, FINGERPRINT_BYTES - pos));
      if (scanner !== undefined && scanError === undefined && !scanner.ended) {
        try {
          scanner.push(chunk);
        } catch (err) {
          if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
          scanError = { message: err.message, at: scanner.offset - 512, reported: false };
        }
      }
      // every sample whose span ends inside what has been read so far
      while (next < expected.length && spans !== undefined) {
        const p = expected[next] as number;
        const off = spans.offset[p] as number;
        const len = spans.span[p] as number;
        if (off >= end && len > 0) break;
        if (off + len <= end && off >= pos && spanBuf === undefined && streamed === undefined) {
          // one member stored as is: its CRC32C is in the span table, and its entry is needed only to report it
          if (scanner === undefined && spans.lone[p] === 1 && crc32cSpan(chunk, off - pos, off - pos + len) === spans.crc[p]) memberBytes += len;
          else await checkEntry(p, chunk.subarray(off - pos, off - pos + len));
        } else if (len > maxGathered) {
          if (streamed === undefined) {
            streamedEntry = await (pages as PageReader).entry(spans as SpanTable, p);
            streamed = new MemberStream(streamedEntry, record.file);
          }
          const from = Math.max(off, pos);
          const to = Math.min(off + len, end);
          streamed.push(chunk.subarray(from - pos, to - pos), from);
          if (off + len > end) break;
          // the whole span has been read: every member's tar header has been scanned
          const entry = streamedEntry as IndexEntry;
          for (const v of streamed.finish()) {
            const bad = (what: string): void => ctx.damage({ key: entry.key, shard: record.file, offset: v.at, what: `member "${v.member.ext}": ${what}` });
            if (scanner !== undefined) checkTarHeader(entry, v.member.ext, v.member.storedSize, v.at, v.member.codec === Codec.lz4, bad);
            memberBytes += v.member.size;
            if (v.problem !== undefined) bad(v.problem);
          }
          streamed = undefined;
        } else {
          spanBuf ??= new Uint8Array(len);
          const from = Math.max(off, pos);
          const to = Math.min(off + len, end);
          spanBuf.set(chunk.subarray(from - pos, to - pos), from - off);
          if (off + len > end) break;
          await checkEntry(p, spanBuf);
          spanBuf = undefined;
        }
        next++;
        if (scanner !== undefined) {
          for (const k of headers.keys()) {
            if (k >= off) break;
            headers.delete(k);
          }
        }
      }
      pos = end;
      onBytes(pos);
    }
    for (; next < expected.length && spans !== undefined; next++) {
      const p = expected[next] as number;
      const entry = await (pages as PageReader).entry(spans, p);
      ctx.damage({ key: entry.key, shard: record.file, offset: entry.offset, what: `the shard ends at byte ${size}, before this sample's span ends` });
    }
    copied = (await copy?.commit()) ?? false;
  } finally {
    await copy?.abort();
    await source.close();
    ctx.cache?.finished(ctx.index, record.bytes, copied, size === record.bytes && crc >>> 0 === record.crc32c >>> 0);
  }
  ctx.memberBytes = memberBytes;
  checkHead(ctx, head, size);
  if (ctx.manifestShard !== undefined && crc32cHex(crc) !== ctx.manifestShard.crc32c) ctx.changed(record.file);
  if (size === record.bytes && (crc >>> 0) !== record.crc32c) {
    ctx.problem(record.file, `whole-file CRC32C is ${crc32cHex(crc)}, the index says ${crc32cHex(record.crc32c)}${scanError === undefined ? '' : `; ${scanError.message}`}`);
  }
  return true;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b.slice();
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
