/**
 * The bench's epoch child: `node epoch-child.js JOB.json RESULT.json`. Runs one side's epochs in a fresh process
 * (so no side inherits the other's heap, JIT state or open handles) and writes what it measured to RESULT.json.
 * Prints progress lines `{"done": samples}` on stdout; nothing else.
 */
import fs from 'node:fs';
import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';
import { isShardkitError } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { IoStats } from '../io/io-stats.js';
import { openDataset } from '../read/dataset.js';
import { decodeImage, imageExtTest } from '../read/decode-image.js';
import { planEpoch, type EpochPlan } from '../read/epoch-plan.js';
import { dropPageCache } from './cache.js';
import { readGroupReads, type GroupReads } from './cgroup-io-stat.js';
import { CHILD_READY_LINE, CHILD_START_LINE, type CacheDropResult, type ChildResult, type EpochJob, type EpochResult } from './child-protocol.js';
import { decodeMembers, importLmdb, lmdbOpenOptions } from './lmdb-side.js';
import { ownResidentMappedBytes } from './mapped-memory.js';
import { RawSampleReader } from './raw-reader.js';
import { cacheStatsDelta } from './remote-section.js';
import type { CacheStats } from '../cache/shard-cache.js';

/** Yields batches of one epoch and what they cost; one per side. */
interface SideRunner {
  /** Runs one epoch, calling `onBatch(samples, payloadBytes)` as batches arrive; returns the batch waits. */
  epoch(epoch: number, onBatch: OnBatch): Promise<number[]>;
  counters(): { opens: number; reads: number; mappedReads: number; stats: number; closes: number; bytesRead: number };
  /** Shard side from a remote or through a cache: what the epoch sent to the source and what the cache did. */
  remote?(): NonNullable<EpochResult['remote']>;
  reset(): void;
  close(): Promise<void>;
}

/** Called per batch with its sample count and payload (the sum of its members' sizes). */
type OnBatch = (samples: number, payloadBytes: number) => void;

const PROGRESS_INTERVAL_MS = 200;

/** Payload of delivered samples: the byte length of every member. */
function memberBytes(samples: readonly Sample[]): number {
  let n = 0;
  for (const s of samples) for (const bytes of Object.values(s.members)) n += bytes.length;
  return n;
}

/** read_bytes of /proc/self/io: what reached the block device (page cache misses and read-ahead), or null. */
function storageReadBytes(): number | null {
  try {
    const m = /^read_bytes:\s*(\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'));
    return m === null ? null : Number(m[1]);
  } catch {
    return null;
  }
}

function planOf(job: EpochJob, epoch: number): EpochPlan {
  return planEpoch({ shardSizes: job.shardSizes, seed: job.seed, epoch, shuffle: job.order === 'random' ? 'full' : 'none', batchSize: job.batch });
}

/** Decodes image members the way the shard loader's decode: 'image' does (sharp, bounded by the core count). */
function imageDecoder(job: EpochJob): ((samples: Sample[]) => Promise<unknown>) | undefined {
  const isImage = imageExtTest(job.decode);
  if (isImage === undefined) return undefined;
  const limit = pLimit(availableParallelism());
  return (samples) =>
    Promise.all(samples.flatMap((s) => Object.entries(s.members).filter(([ext]) => isImage(ext)).map(([ext, bytes]) => limit(() => decodeImage(bytes, s.key, ext)))));
}

/** Runs batches of positions through `fetch`, timing each batch from request to samples in hand. */
async function timedBatches(plan: EpochPlan, batch: number, fetch: (positions: number[]) => Promise<number>, onBatch: OnBatch): Promise<number[]> {
  const waits: number[] = [];
  for (let first = 0; first < plan.length; first += batch) {
    const positions: number[] = [];
    for (let i = first; i < Math.min(plan.length, first + batch); i++) positions.push(plan.at(i));
    const t0 = performance.now();
    const payload = await fetch(positions);
    waits.push((performance.now() - t0) / 1000);
    onBatch(positions.length, payload);
  }
  return waits;
}

async function rawRunner(job: EpochJob): Promise<SideRunner> {
  const io = new IoStats();
  const reader = new RawSampleReader(job.rawDir, io, pLimit(job.concurrency));
  const decode = imageDecoder(job);
  return {
    epoch: (epoch, onBatch) =>
      timedBatches(planOf(job, epoch), job.batch, async (positions) => {
        const samples = await reader.readBatch(positions.map((p) => job.keys[p] as string), positions.map((p) => job.exts[p] as string[]));
        if (decode) await decode(samples);
        return memberBytes(samples);
      }, onBatch),
    counters: () => io.snapshot(),
    reset: () => io.reset(),
    close: () => Promise.resolve(),
  };
}

async function shardRunner(job: EpochJob): Promise<SideRunner> {
  const io = new IoStats();
  const cache = job.shardCache === undefined ? {} : { cache: { ...job.shardCache } };
  const ds = await openDataset(job.remote ?? job.dataset, { ioStats: io, ...cache });
  let cacheBefore: CacheStats | undefined = ds.stats().cache;
  // decode: 'image' hands back pixels, not the members' bytes: their payload is what the index says they hold
  const bytesOf = new Map(job.keys.map((key, i) => [key, job.sampleBytes[i] ?? 0]));
  return {
    async epoch(epoch, onBatch) {
      const loader = ds.loader({ batchSize: job.batch, shuffle: job.order === 'random' ? 'full' : 'none', seed: job.seed, epoch, concurrency: job.concurrency, decode: job.decode });
      const waits: number[] = [];
      const it = loader[Symbol.asyncIterator]();
      for (;;) {
        const t0 = performance.now();
        const r = await it.next();
        if (r.done) break;
        waits.push((performance.now() - t0) / 1000);
        let payload = 0;
        for (const s of r.value) payload += bytesOf.get(s.key) ?? 0;
        onBatch(r.value.length, payload);
      }
      return waits;
    },
    counters: () => io.snapshot(),
    ...(job.remote === undefined && job.shardCache === undefined
      ? {}
      : {
          remote: () => {
            const now = ds.stats().cache;
            return { requests: io.httpRequests, cache: now === undefined || cacheBefore === undefined ? null : cacheStatsDelta(now, cacheBefore) };
          },
        }),
    reset: () => {
      io.reset();
      cacheBefore = ds.stats().cache;
    },
    close: () => ds.close(),
  };
}

async function lmdbRunner(job: EpochJob): Promise<SideRunner> {
  const open = await importLmdb();
  const db = open(lmdbOpenOptions(job.lmdbPath, true));
  const decode = imageDecoder(job);
  // LMDB reads through mmap: one get() per sample is counted as its read request, served from the map.
  const c = { opens: 0, reads: 0, mappedReads: 0, stats: 0, closes: 0, bytesRead: 0 };
  return {
    epoch: (epoch, onBatch) =>
      timedBatches(planOf(job, epoch), job.batch, async (positions) => {
        const samples = positions.map((p) => {
          const key = job.keys[p] as string;
          const value = db.getBinary(key);
          if (value === undefined) throw new Error(`LMDB has no record for sample "${key}"`);
          c.reads++;
          c.mappedReads++;
          c.bytesRead += value.length;
          return decodeMembers(key, value);
        });
        if (decode) await decode(samples);
        return memberBytes(samples);
      }, onBatch),
    counters: () => ({ ...c }),
    reset: () => {
      c.opens = c.reads = c.mappedReads = c.stats = c.closes = c.bytesRead = 0;
    },
    close: () => db.close(),
  };
}

/** Says the child is set up, then waits for the parent's start line (it moves this process into a cgroup first). */
async function waitForStart(): Promise<void> {
  process.stdout.write(`${CHILD_READY_LINE}\n`);
  const line = await new Promise<string>((resolve, reject) => {
    let pending = '';
    const onData = (d: string): void => {
      pending += d;
      const nl = pending.indexOf('\n');
      if (nl >= 0) {
        done();
        resolve(pending.slice(0, nl).trim());
      }
    };
    const onEnd = (): void => {
      done();
      reject(new Error('the bench parent closed stdin before telling the child to start'));
    };
    const done = (): void => {
      process.stdin.off('data', onData).off('end', onEnd);
      process.stdin.destroy();
    };
    process.stdin.setEncoding('utf8').on('data', onData).on('end', onEnd);
  });
  if (line !== CHILD_START_LINE) throw new Error(`expected "${CHILD_START_LINE}" on stdin but received "${line.slice(0, 40)}"`);
}

function readsBetween(before: GroupReads | null, after: GroupReads | null): GroupReads | null {
  return before === null || after === null ? null : { ios: after.ios - before.ios, bytes: after.bytes - before.bytes };
}

async function main(jobFile: string): Promise<ChildResult> {
  const job = JSON.parse(fs.readFileSync(jobFile, 'utf8')) as EpochJob;
  const runner = job.side === 'raw' ? await rawRunner(job) : job.side === 'shards' ? await shardRunner(job) : await lmdbRunner(job);
  const epochs: EpochResult[] = [];
  let done = 0;
  let epochSamples = 0;
  let epochPayload = 0;
  let lastPrint = 0;
  let mappedDataBytes: number | null = null;
  const onBatch: OnBatch = (n, payloadBytes) => {
    done += n;
    epochSamples += n;
    epochPayload += payloadBytes;
    const now = performance.now();
    if (now - lastPrint >= PROGRESS_INTERVAL_MS) {
      lastPrint = now;
      process.stdout.write(`${JSON.stringify({ done })}\n`);
    }
  };
  try {
    if (job.waitForStart) await waitForStart();
    for (const epoch of job.setupOnly ? [] : job.epochs) {
      let cache: CacheDropResult | null = null;
      if (job.cold) cache = dropPageCache(job.evictDirs, job.probeFiles);
      runner.reset();
      const groupBefore = job.groupIo === undefined ? null : readGroupReads(job.groupIo);
      epochSamples = 0;
      epochPayload = 0;
      const faultsBefore = process.resourceUsage().majorPageFault;
      const storageBefore = storageReadBytes();
      const t0 = performance.now();
      const batchWaits = await runner.epoch(epoch, onBatch);
      const seconds = (performance.now() - t0) / 1000;
      const storageAfter = storageReadBytes();
      const groupReads = job.groupIo === undefined ? undefined : readsBetween(groupBefore, readGroupReads(job.groupIo));
      epochs.push({
        epoch,
        seconds,
        samples: epochSamples,
        ...runner.counters(),
        payloadBytes: epochPayload,
        batchWaits,
        storageReadBytes: storageBefore === null || storageAfter === null ? null : storageAfter - storageBefore,
        majorPageFaults: process.resourceUsage().majorPageFault - faultsBefore,
        cache,
        ...(runner.remote === undefined ? {} : { remote: runner.remote() }),
        ...(groupReads === undefined ? {} : { groupReads }),
      });
    }
    // before close() unmaps them: the data pages the epochs left resident, which peakRssBytes counts too
    mappedDataBytes = ownResidentMappedBytes([job.side === 'raw' ? job.rawDir : job.side === 'shards' ? job.dataset : job.lmdbPath]);
  } finally {
    await runner.close();
  }
  process.stdout.write(`${JSON.stringify({ done })}\n`);
  return { ok: true, side: job.side, epochs, peakRssBytes: process.resourceUsage().maxRSS * 1024, mappedDataBytes };
}

const [jobFile, resultFile] = process.argv.slice(2);
if (jobFile === undefined || resultFile === undefined) {
  process.stderr.write('usage: epoch-child.js JOB.json RESULT.json\n');
  process.exitCode = 2;
} else {
  let result: ChildResult;
  try {
    result = await main(jobFile);
  } catch (err) {
    result = isShardkitError(err)
      ? { ok: false, code: err.code, message: err.message }
      : { ok: false, code: 'SHARDKIT_ERR_IO', message: err instanceof Error ? err.message : String(err) };
    process.exitCode = 1;
  }
  fs.writeFileSync(resultFile, JSON.stringify(result));
}
