/**
 * The many-nodes model (src/cache/node-model.ts) against a small real run: two processes, ranks 0 and 1 of 2, each
 * with its own cache dir (two "nodes"), reading one dataset from a real nginx; bytes counted from nginx's access log.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectNodes, type StrategyTraffic } from '../../src/cache/node-model.js';
import { openDataset } from '../../src/read/dataset.js';
import { planEpoch } from '../../src/read/epoch-plan.js';
import { ROOT } from '../helpers/cli.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { nginxSkipReason, startNginx, type AccessLogEntry, type NginxServer } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

const SEED = 5;
const EPOCHS = [0, 1];
let root: string;
let server: NginxServer;
let shardBytes: number[];
let shardSamples: number[];
let spans: number[];

/** One node: a process reading epochs 0 and 1 as `rank` of 2, with its own cache dir (or none). */
function node(rank: number, cache: { dir: string; maxBytes: number } | undefined): Promise<void> {
  const script = `
    import { openDataset } from ${JSON.stringify(path.join(ROOT, 'dist/src/index.js'))};
    const ds = await openDataset(${JSON.stringify(`${server.url}/ds`)}, ${JSON.stringify(cache === undefined ? {} : { cache })});
    let n = 0;
    for (const epoch of ${JSON.stringify(EPOCHS)}) {
      for await (const batch of ds.loader({ batchSize: 16, shuffle: 'block', seed: ${SEED}, epoch, rank: ${rank}, worldSize: 2 })) n += batch.length;
    }
    await ds.close();
    if (n !== 1200) throw new Error('read ' + n + ' samples');
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`node ${rank} exited ${code}: ${stderr}`))));
  });
}

function shardLog(log: AccessLogEntry[]): AccessLogEntry[] {
  return log.filter((e) => /shard-\d+\.tar$/.test(e.uri));
}

function rangeBytes(entries: AccessLogEntry[]): number {
  return entries.reduce((n, e) => {
    const m = /bytes=(\d+)-(\d+)/.exec(e.range);
    return n + (m === null ? 0 : Number(m[2]) - Number(m[1]) + 1);
  }, 0);
}

function model(cacheBytesPerNode: number): StrategyTraffic[] {
  const orders = EPOCHS.map((epoch) => planEpoch({ shardSizes: shardSamples, seed: SEED, epoch, shuffle: 'block' }).order);
  return projectNodes({ shardBytes, shardSamples, sampleBytes: spans, orders, nodes: 2, cacheBytesPerNode });
}

const total = (rows: StrategyTraffic[], strategy: string, what: 'remoteBytes' | 'remoteRequests'): number =>
  (rows.find((r) => r.strategy === strategy) as StrategyTraffic).epochs.reduce((n, e) => n + e[what], 0);

describe.skipIf(nginxSkipReason !== undefined)('the many-nodes model against two real processes (real nginx)', () => {
  beforeAll(async () => {
    root = tmpDir();
    await writeLoaderDataset(path.join(root, 'ds'), 1200, { shardBytes: 256 * 1024 });
    server = await startNginx(root);
    const ds = await openDataset(path.join(root, 'ds'));
    shardBytes = ds.shards.map((s) => s.bytes);
    shardSamples = ds.shards.map((s) => s.samples);
    // each sample's span: its members from the first header to the last byte, as a range read fetches it
    spans = [];
    for (let i = 0; i < ds.size; i++) {
      spans.push((await ds.index.at(i)).length);
    }
    await ds.close();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('per-node caches holding the dataset: the two nodes fetch exactly the shard bytes the model says', async () => {
    const maxBytes = 2 * shardBytes.reduce((a, b) => a + b, 0);
    const before = (await server.accessLog()).length;
    await Promise.all([0, 1].map((rank) => node(rank, { dir: tmpDir(), maxBytes })));
    const real = rangeBytes(shardLog((await server.accessLog()).slice(before)));
    const rows = model(maxBytes);
    expect(real).toBe(total(rows, 'per-node-min', 'remoteBytes'));
    expect(real).toBe(total(rows, 'per-node-lru', 'remoteBytes'));
  });

  it('no cache: the model is a lower bound on bytes and an upper bound on requests (the loader coalesces across gaps)', async () => {
    const before = (await server.accessLog()).length;
    await Promise.all([0, 1].map((rank) => node(rank, undefined)));
    const log = shardLog((await server.accessLog()).slice(before)).filter((e) => e.range !== 'bytes=0-0');
    const rows = model(0);
    expect(rangeBytes(log)).toBeGreaterThanOrEqual(total(rows, 'none', 'remoteBytes'));
    expect(log.length).toBeLessThanOrEqual(total(rows, 'none', 'remoteRequests'));
  });
});
