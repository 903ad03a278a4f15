/**
 * The bench's shard side from a remote (`--remote`) or through a shard cache (`--cache-dir`): checks that the URL
 * serves the dataset being benched, and gives each shard-side process an empty cache of its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { Manifest } from '../../formats/manifest.js';
import { redactLocation } from '../io/location.js';
import { openDataset } from '../read/dataset.js';
import type { ResolvedBenchOptions } from './bench-options.js';
import type { EpochResult } from './child-protocol.js';
import type { RemoteEpoch } from './remote-section.js';

/** Fails unless `url` serves the dataset whose manifest is `local` (the same index, by its CRC32C). */
export async function expectSameDataset(url: string, local: Manifest, dataset: string): Promise<void> {
  const remote = await openDataset(url);
  try {
    if (remote.manifest.index.crc32c !== local.index.crc32c) {
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        `${redactLocation(url)} serves another dataset than ${dataset} (index CRC32C ${remote.manifest.index.crc32c}, not ${local.index.crc32c}): pass the URL that serves ${dataset} as --remote`,
      );
    }
  } finally {
    await remote.close();
  }
}

/**
 * A fresh cache directory for each shard-side process, under the user's dir: every process starts empty, so its
 * first epoch fills the cache; removed when the process is done (the user's other cached data is left alone).
 */
export class BenchCacheDirs {
  private readonly made: string[] = [];
  private count = 0;

  constructor(private readonly cache: ResolvedBenchOptions['shardCache']) {}

  /** The job's shardCache for one process (none without a cache). */
  next(): { shardCache?: { dir: string; maxBytes: number; policy: 'clairvoyant' | 'lru' } } {
    if (this.cache === null) return {};
    const dir = path.join(path.resolve(this.cache.dir), `shardkit-bench-${process.pid}-${this.count++}`);
    fs.rmSync(dir, { recursive: true, force: true });
    this.made.push(dir);
    return { shardCache: { ...this.cache, dir } };
  }

  /** Removes every directory made so far. */
  removeAll(): void {
    for (const d of this.made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  }
}

/** The remote table's rows for one shard-side process's epochs. */
export function remoteEpochs(epochs: readonly EpochResult[]): RemoteEpoch[] {
  return epochs.map((e, i) => ({ epoch: e.epoch, firstInProcess: i === 0, seconds: e.seconds, requests: e.remote?.requests ?? 0, bytes: e.bytesRead, cache: e.remote?.cache ?? null }));
}
