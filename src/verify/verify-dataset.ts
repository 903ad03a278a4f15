/**
 * `shardkit verify`: proves a dataset is intact, or names what is not.
 *
 * Full check: the manifest against the index (counts, byte totals, shard table) and its extra files, every index
 * invariant ({@link checkIndex}), and every shard streamed once, front to back: its size, fingerprint and whole-file
 * CRC32C, each sample's members decompressed and checked against their CRC32C, and in the tar layout each member's
 * tar header (name and size) against the index. The shards are checked during the index walk, one pass over each
 * file, as each leaf's samples arrive (shard-stream.ts): memory stays flat whatever the number of samples. Quick check (`quick: true`): the manifest and its extra files, the
 * index invariants, and each shard's size and fingerprint; no member is read. Damage inside a sample is reported
 * with its key; damage the index cannot place (a shard's padding or end blocks) is reported against the shard. A
 * shard that cannot be read (EIO, a directory) is a problem of its own, and the shards after it are still checked.
 */
import { isHttpDeadline } from '../io/http-client.js';
import { VERIFY_MAX_GATHERED_BYTES, maxGatheredSpanBytes, verifyChunkBytes } from './member-stream.js';
import { crc32cHex } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { HEADER_BYTES, decodeIndexHeader, decodeShardTable, indexRemedy, type IndexHeader, type ShardRecord } from '../../formats/index-layout.js';
import { MANIFEST_FILE, type Manifest } from '../../formats/manifest.js';
import type { ByteSource } from '../io/byte-source.js';
import { HttpClient, type HttpClientOptions } from '../io/http-client.js';
import { isRemote, redactLocation, resolveLocation } from '../io/location.js';
import { openByteSource } from '../io/open-source.js';
import { checkExtraFiles } from './check-files.js';
import { checkShardIndex } from './check-shard-index.js';
import { readManifest } from './read-manifest.js';
import { VerifyCache, type VerifyCacheReport } from './verify-cache.js';
import type { CacheOptions } from '../cache/shard-cache.js';
import { adviseAroundDamagedShards } from './shard-remedy.js';
import { PageReader, checkIndex, type LeafSink } from './check-index.js';
import { ShardCheck, type ShardResult } from './shard-check.js';
import { ShardStream } from './shard-stream.js';
import { SpanTable } from './span-table.js';
import { nativeAddon, useNativeCrc32c, type NativeAddon } from '../native/native.js';

/**
 * Shard bytes read at once (two buffers of it per shard being read: one checked, the next in flight). 8 MiB, the
 * kernel's usual read-ahead on this machine's disk: a cold verify of /usr/share took 0.92x the time of 4 MiB reads
 * (8 alternated pairs, 0.76-1.12), tree A 0.94x; peak RSS 8 MiB more a shard being read.
 */
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
  /**
   * `false`: check with the JavaScript loops only, not the native addon's (the report is the same; for tests and
   * comparisons). SHARDKIT_NATIVE=0 turns the addon off for the whole process.
   */
  native?: boolean;
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
  if (options.native !== undefined && typeof options.native !== 'boolean') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a boolean for native but received ${JSON.stringify(options.native)}`);
  }
  if (options.cache !== undefined && quick) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, 'a cache is filled by a full verify (it copies the shards it streams); a quick verify reads no shard: drop --quick or the cache');
  }
  // hardware CRC32C for the pages and the whole-file checksums, as a dataset's reads use it (SHARDKIT_NATIVE=0: off)
  useNativeCrc32c();
  // one client for the manifest, the index and every shard: their requests share kept-alive connections
  const client = isRemote(location) ? new HttpClient(options.http) : undefined;
  try {
    const native = options.native === false ? undefined : nativeAddon();
    return await verifyWith(location, client === undefined ? {} : { client }, quick, maxReported, options.onProgress, options.cache, native);
  } finally {
    client?.close();
  }
}

/** How verify opens the dataset's files: with the dataset's HTTP client when it is remote. */
export interface Opener {
  client?: HttpClient;
}

async function verifyWith(
  location: string,
  opener: Opener,
  quick: boolean,
  maxReported: number,
  onProgress: VerifyOptions['onProgress'],
  cacheOptions: CacheOptions | undefined,
  native: NativeAddon | undefined,
): Promise<VerifyReport> {
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
  // without a usable index, the manifest still says what each shard should be (size and CRC32C)
  const shards: ShardRecord[] = opened?.shards ?? manifest.shards.map((s) => ({ file: s.file, bytes: s.bytes, samples: s.samples, crc32c: Number.parseInt(s.crc32c, 16), fingerprint: -1 }));
  const pages = opened === undefined ? undefined : new PageReader(opened.source, opened.header);
  const results: (ShardResult | undefined)[] = new Array<ShardResult | undefined>(shards.length).fill(undefined);
  let cache: VerifyCache | undefined;
  let stream: ShardStream | undefined;
  try {
    if (cacheOptions !== undefined) cache = VerifyCache.open(cacheOptions, location, manifest.index.crc32c, shards);
    const total = quick ? shards.length : shards.reduce((n, s) => n + s.bytes, 0);
    let done = 0;
    // while the index walk drives the shard checks, its pages are the progress (one phase at a time for a bar)
    let walking = false;
    const shardCheck = (i: number, withCache = true): ShardCheck =>
      new ShardCheck({
        location,
        opener,
        manifest,
        record: shards[i] as ShardRecord,
        index: i,
        manifestShard: manifest.shards[i],
        pages,
        cache: withCache ? cache : undefined,
        maxReported,
        chunkBytes: verifyChunkBytes(VERIFY_CHUNK_BYTES),
        maxGathered: maxGatheredSpanBytes(VERIFY_MAX_GATHERED_BYTES),
        onBytes: (n) => {
          done += n;
          if (!walking) onProgress?.({ phase: 'shards', done, total });
        },
        native,
      });
    // the full check streams the shards during the index walk (shard-stream.ts); a quick one reads no member
    stream = quick ? undefined : new ShardStream(shards.length, (i) => shardCheck(i), manifest.layout === 'tar');
    const sink: LeafSink = stream ?? { leaf: () => undefined };
    if (opened !== undefined && pages !== undefined) {
      walking = true;
      const result = await checkIndex(pages, opened.header, opened.shards, sink, (d, t) => onProgress?.({ phase: 'index', done: d, total: t }), native);
      walking = false;
      if (!quick) onProgress?.({ phase: 'shards', done, total });
      report.checked.pages = result.pages;
      report.checked.samples = result.samples;
      report.checked.members = result.members;
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
    if (stream === undefined) {
      for (let i = 0; i < shards.length; i++) {
        results[i] = await shardCheck(i).quick();
        onProgress?.({ phase: 'shards', done: i + 1, total });
      }
    } else {
      const left = await stream.finish();
      stream.results.forEach((r, i) => void (results[i] = r));
      // shards no sample points to, and shards whose samples did not come in offset order: from their spans sorted
      const unordered = stream.unordered();
      const spans = new SpanTable(Uint8Array.from(shards, (_, i) => (unordered.includes(i) ? 1 : 0)));
      if (unordered.length > 0 && opened !== undefined && pages !== undefined) await checkIndex(pages, opened.header, opened.shards, spans, undefined, native);
      for (const i of left) {
        const check = shardCheck(i, stream.closed[i] !== 1);
        try {
          for (const k of spans.positions(i)) await check.sample(spans.offset[k] as number, spans.span[k] as number, spans.crc[k] as number, spans.page[k] as number, spans.slot[k] as number);
        } catch (err) {
          await check.abandon();
          throw err;
        }
        results[i] = await check.finish();
      }
    }
    await addShardResults(report, shards, results as ShardResult[], maxReported, cache);
  } finally {
    await stream?.abandon();
    await pages?.stop();
    await opened?.source.close();
    await cache?.close();
  }
  report.ok = report.problems.length === 0 && report.damagedCount === 0;
  return report;
}

/**
 * Puts each shard's findings in the report, in shard order: its problems, then the damaged samples (all overlaps
 * first, as a pass over spans sorted by offset finds them), the counts, and for a shard whose bytes changed, a
 * verified copy in the cache that can repair it.
 */
async function addShardResults(report: VerifyReport, shards: readonly ShardRecord[], results: readonly ShardResult[], maxReported: number, cache: VerifyCache | undefined): Promise<void> {
  const repairFrom: { shard: string; copy: string }[] = [];
  const changedShards: string[] = [];
  const overlaps: DamagedSample[] = [];
  const damaged: DamagedSample[] = [];
  const keep = (to: DamagedSample[], from: DamagedSample[]): void => void to.push(...from.slice(0, Math.max(0, maxReported - to.length)));
  for (const [i, record] of shards.entries()) {
    const r = results[i] as ShardResult;
    for (const what of r.problems) report.problems.push({ file: record.file, what });
    keep(overlaps, r.overlaps);
    keep(damaged, r.damaged);
    report.damagedCount += r.damagedCount;
    report.checked.memberBytes += r.memberBytes;
    if (r.checked) {
      report.checked.shards++;
      report.checked.shardBytes += record.bytes;
    }
    if (r.changed) {
      changedShards.push(record.file);
      const copy = await cache?.verifiedCopy(i);
      if (copy !== undefined) repairFrom.push({ shard: record.file, copy });
    }
  }
  keep(report.damaged, overlaps);
  keep(report.damaged, damaged);
  adviseAroundDamagedShards(report, changedShards);
  if (cache !== undefined) report.cache = { ...cache.report, repairFrom };
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
