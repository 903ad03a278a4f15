/** `shardkit bench --remote URL [--cache-dir DIR --cache-size SIZE]` against a real nginx on loopback. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../src/bench/report.js';
import { shardkit } from '../helpers/cli.js';
import { nginxSkipReason, startNginx, type AccessLogEntry, type NginxServer } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

const schema = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../../src/bench/report-schema.json', import.meta.url)), 'utf8')) as object;
const validate = new Ajv2020({ strict: true, allErrors: true, validateFormats: false }).compile(schema);

let root: string;
let raw: string;
let ds: string;
let server: NginxServer;
let shardBytes: number;

function shardRangeBytes(log: AccessLogEntry[]): number {
  return log
    .filter((e) => /\/ds\/.*\.tar$/.test(e.uri))
    .reduce((n, e) => {
      const m = /bytes=(\d+)-(\d+)/.exec(e.range);
      return n + (m === null ? 0 : Number(m[2]) - Number(m[1]) + 1);
    }, 0);
}

let lastOut = '';

function bench(args: string[]): BenchReport {
  const out = path.join(tmpDir(), 'report');
  lastOut = out;
  const r = shardkit(['bench', raw, ds, '--epochs', '2', '--repeat', '1', '--no-strace', '--order', 'random', '--out', out, ...args]);
  expect(r.status, r.stderr).toBe(0);
  const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8')) as BenchReport;
  expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
  expect(fs.readFileSync(path.join(out, 'report.md'), 'utf8')).toContain('## Shard side from the remote (measured)');
  expect(r.stdout).toContain(`shard side from ${server.url}/ds`);
  return report;
}

describe.skipIf(nginxSkipReason !== undefined)('bench --remote (real nginx)', () => {
  beforeAll(async () => {
    root = tmpDir('shardkit-bench-remote-');
    raw = path.join(root, 'raw');
    ds = path.join(root, 'ds');
    expect(shardkit(['synth', raw, '--samples', '300', '--classes', '4', '--sizes', 'tiny', '--quiet']).status).toBe(0);
    const packed = shardkit(['pack', raw, '--out', ds, '--shard', '16KiB', '--quiet']);
    expect(packed.status, packed.stderr).toBe(0);
    const manifest = JSON.parse(fs.readFileSync(path.join(ds, 'manifest.json'), 'utf8')) as { totals: { shardBytes: number } };
    shardBytes = manifest.totals.shardBytes;
    server = await startNginx(root);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('with a cache as large as the dataset: the first epoch fetches each shard byte once, the second sends no shard request', async () => {
    const cacheDir = tmpDir();
    const before = (await server.accessLog()).length;
    const report = bench(['--remote', `${server.url}/ds`, '--cache-dir', cacheDir, '--cache-size', String(2 * shardBytes)]);
    expect(shardRangeBytes((await server.accessLog()).slice(before))).toBe(shardBytes);
    const r = report.remote;
    expect(r).toMatchObject({ source: `${server.url}/ds`, cache: { maxBytes: 2 * shardBytes, policy: 'clairvoyant' }, datasetBytes: shardBytes });
    expect(r?.epochs.map((e) => [e.epoch, e.firstInProcess])).toEqual([
      [0, true],
      [1, false],
    ]);
    const [first, second] = r?.epochs ?? [];
    expect(first?.cache?.remoteBytes).toBe(shardBytes);
    expect(first?.bytes).toBeGreaterThanOrEqual(shardBytes);
    expect(second?.cache).toMatchObject({ remoteBytes: 0, misses: 0, evictions: 0 });
    expect(second?.cache?.hits).toBeGreaterThan(0);
    // the raw side still read the local raw directory, every sample
    expect(report.sides.raw.counters[0]?.samples).toBe(300);
    expect(report.sides.shards.counters[1]?.samples).toBe(300);
    // each process's cache is its own subdirectory, removed after it: the user's dir is left as it was
    expect(fs.readdirSync(cacheDir)).toEqual([]);
    // the many-nodes projection: labelled a model, 1 to 1024 nodes, four strategies each
    const model = report.model;
    expect(model?.label).toBe('model');
    expect(model?.cacheBytesPerNode).toBe(2 * shardBytes);
    expect(model?.rows.map((row) => row.nodes)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024].flatMap((n) => [n, n, n, n]));
    const one = model?.rows.find((row) => row.nodes === 1 && row.strategy === 'per-node-min');
    expect(one?.first.remoteBytes).toBe(shardBytes); // one node with room for all: each shard once, as measured above
    expect(one?.later.remoteBytes).toBe(0);
    const md = fs.readFileSync(path.join(lastOut, 'report.md'), 'utf8');
    expect(md).toContain('## Many nodes reading one remote store (MODEL, not measured)');
  });

  it('with no cache: every epoch reads from the server, and the report says so', async () => {
    const before = (await server.accessLog()).length;
    const report = bench(['--remote', `${server.url}/ds`]);
    const r = report.remote;
    expect(r?.cache).toBeNull();
    // each epoch reads every sample's span (not the tar headers and end blocks a shard also holds)
    r?.epochs.forEach((e, i) => {
      expect(e.cache).toBeNull();
      expect(e.requests).toBeGreaterThan(0);
      expect(e.bytes).toBeGreaterThanOrEqual(report.sides.shards.counters[i]?.payloadBytes ?? Infinity);
    });
    // what the report counts is what nginx served: shard ranges of both epochs (plus index pages in `bytes`)
    const served = shardRangeBytes((await server.accessLog()).slice(before));
    expect(served).toBeGreaterThan(0);
    expect((r?.epochs ?? []).reduce((n, e) => n + e.bytes, 0)).toBeGreaterThanOrEqual(served);
  });

  it('refuses a URL that serves another dataset, and a throttle with a remote side', async () => {
    const other = path.join(root, 'other');
    expect(shardkit(['pack', raw, '--out', other, '--shard', '32KiB', '--quiet']).status).toBe(0);
    const wrong = shardkit(['bench', raw, ds, '--remote', `${server.url}/other`, '--no-strace', '--out', path.join(tmpDir(), 'x')]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: http:\/\/127\.0\.0\.1:\d+\/other serves another dataset than .*: pass the URL that serves .* as --remote\n$/);
    const throttled = shardkit(['bench', raw, ds, '--remote', `${server.url}/ds`, '--throttle-iops', '100', '--no-strace', '--out', path.join(tmpDir(), 'y')]);
    expect(throttled.status).toBe(2);
    expect(throttled.stderr).toContain('drop --throttle-iops, or --remote and --cache-dir');
  });
});
