/**
 * The bench's remote section (`--remote URL`, `--cache-dir DIR --cache-size SIZE`): the shard side reads the
 * dataset from a server (or through a node-local shard cache) while the raw side reads the local raw directory.
 * Per shard-side epoch: what went to the source (requests, bytes) and what the loader's shard cache did.
 */
import type { EpochTraffic, NodeStrategy } from '../cache/node-model.js';
import type { CacheStats } from '../cache/shard-cache.js';
import { formatBytes, formatNumber, formatSeconds } from './report-format.js';
import type { Table } from './report-tables.js';

export interface RemoteEpoch {
  /** The epoch number (its order is a function of seed and epoch). */
  epoch: number;
  /** The first epoch its process ran: with a cache, every process starts with an empty one (a fresh subdirectory). */
  firstInProcess: boolean;
  seconds: number;
  /** HTTP requests sent to the source, retries included (0 for a local source read through the cache). */
  requests: number;
  /** Bytes read from the source: whole-shard downloads and range reads. */
  bytes: number;
  /** The shard cache's counters over the epoch; null without a cache. */
  cache: CacheStats | null;
}

export interface RemoteSection {
  /** Where the shard side read the dataset: the URL (query left out), or the local dataset read through the cache. */
  source: string;
  /** The shard cache, or null (remote reads with no cache). */
  cache: { maxBytes: number; policy: 'clairvoyant' | 'lru' } | null;
  /** Shard bytes of the dataset: what one read of each byte costs. */
  datasetBytes: number;
  epochs: RemoteEpoch[];
}

/** The epochs of the shard side as the remote table shows them, with bytes against the dataset's size. */
export function remoteTable(section: RemoteSection): Table {
  const cached = section.cache !== null;
  return {
    title: 'Shard side from the remote (measured)',
    caption:
      `The shard side read ${section.source}${cached ? ` through a shard cache of ${formatBytes(section.cache?.maxBytes ?? 0)} (${section.cache?.policy}), empty at the start of each process` : ' with no cache'}; ` +
      `the raw side read the local raw directory. "x dataset": bytes from the source / the dataset's ${formatBytes(section.datasetBytes)} of shards.`,
    header: ['epoch', 'first in process', 'seconds', 'requests', 'bytes from source', 'x dataset', ...(cached ? ['hits', 'misses', 'prefetched', 'prefetch stalls', 'evictions'] : [])],
    rows: section.epochs.map((e) => [
      String(e.epoch),
      e.firstInProcess ? 'yes' : 'no',
      formatSeconds(e.seconds),
      formatNumber(e.requests),
      formatBytes(e.bytes),
      section.datasetBytes === 0 ? 'n/a' : (e.bytes / section.datasetBytes).toFixed(2),
      ...(cached && e.cache !== null ? [formatNumber(e.cache.hits), formatNumber(e.cache.misses), formatBytes(e.cache.prefetchedBytes), formatNumber(e.cache.prefetchStalls), formatNumber(e.cache.evictions)] : cached ? ['', '', '', '', ''] : []),
    ]),
  };
}

/** The difference of two cumulative cache counters: one epoch's. */
export function cacheStatsDelta(after: CacheStats, before: CacheStats): CacheStats {
  const out = { ...after };
  for (const k of Object.keys(out) as (keyof CacheStats)[]) out[k] = after[k] - before[k];
  return out;
}

/** The many-nodes projection in the report: a MODEL (src/cache/node-model.ts), never mixed with measurements. */
export interface NodeModelSection {
  label: 'model';
  /** What was modelled, and on what assumptions. */
  what: string;
  cacheBytesPerNode: number;
  datasetBytes: number;
  rows: { nodes: number; strategy: NodeStrategy; first: EpochTraffic; later: EpochTraffic }[];
}

/** Node counts the report projects: powers of two from 1 to 1024. */
export const MODEL_NODES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export function nodeModelTable(section: NodeModelSection): Table {
  const x = (b: number): string => (section.datasetBytes === 0 ? 'n/a' : `${(b / section.datasetBytes).toFixed(2)}x`);
  return {
    title: 'Many nodes reading one remote store (MODEL, not measured)',
    caption: `${section.what} Bytes as multiples of the dataset's ${formatBytes(section.datasetBytes)}; a cache of ${formatBytes(section.cacheBytesPerNode)} per node.`,
    header: ['nodes', 'strategy', 'remote, 1st epoch', 'requests, 1st epoch', 'remote, next epoch', 'requests, next epoch', 'peer bytes, next epoch'],
    rows: section.rows.map((r) => [String(r.nodes), r.strategy, x(r.first.remoteBytes), formatNumber(r.first.remoteRequests), x(r.later.remoteBytes), formatNumber(r.later.remoteRequests), x(r.later.peerBytes)]),
  };
}
