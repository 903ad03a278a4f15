/**
 * The bench's counters equal what the loaders did, on a small real dataset: synthesized tiny files, packed with
 * the library into several shards, benched in real child processes (the compiled child in dist/: `npm run build`
 * first; `npm test` does). Expectations are computed from the files on disk, never written in.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import type { BenchReport } from '../../src/bench/report.js';
import { synthDataset } from '../../src/bench/synth.js';
import { straceAvailable } from '../../src/bench/strace.js';
import { pack } from '../../src/pack/pack.js';
import { tmpDir } from '../helpers/tmp.js';

const schema = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../../src/bench/report-schema.json', import.meta.url)), 'utf8')) as object;
const validate = new Ajv2020({ strict: true, allErrors: true, validateFormats: false }).compile(schema);

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

let raw: string;
let ds: string;
let report: BenchReport;
let rawFiles: string[];
let manifest: { shards: unknown[]; totals: { samples: number }; index: { bytes: number; pageSize: number } };

beforeAll(async () => {
  const root = tmpDir('shardkit-bench-');
  raw = path.join(root, 'raw');
  ds = path.join(root, 'ds');
  await synthDataset({ dir: raw, samples: 48, classes: 3, sizes: 'mixed', seed: 3 });
  await pack({ source: raw, out: ds, shardBytes: 64 * 1024 });
  rawFiles = filesUnder(raw);
  manifest = JSON.parse(fs.readFileSync(path.join(ds, 'manifest.json'), 'utf8'));
  report = await runBench({ rawDir: raw, dataset: ds, epochs: 2, repeat: 1, batch: 8, order: 'random' });
}, 60_000);

describe('runBench counters', () => {
  it('counts on the raw side exactly one open, fstat and close, and at least one read, per raw file per epoch', () => {
    expect(report.sides.raw.counters).toHaveLength(2);
    const bytes = rawFiles.reduce((n, f) => n + fs.statSync(f).size, 0);
    for (const c of report.sides.raw.counters) {
      expect(c.samples).toBe(manifest.totals.samples);
      expect(c.opens).toBe(rawFiles.length);
      expect(c.stats).toBe(rawFiles.length);
      expect(c.closes).toBe(rawFiles.length);
      expect(c.reads).toBeGreaterThanOrEqual(rawFiles.length);
      expect(c.bytesRead).toBe(bytes);
      expect(c.payloadBytes).toBe(bytes);
    }
    expect(report.dataset.rawFiles).toBe(rawFiles.length);
    expect(report.dataset.rawBytes).toBe(bytes);
    expect(report.dataset.rawAllocatedBytes).toBe(rawFiles.reduce((n, f) => n + fs.statSync(f).blocks * 512, 0));
  });

  it('opens each shard once per process, and reads at most one span per sample plus one fingerprint per shard and the index pages', () => {
    const S = manifest.shards.length;
    const N = manifest.totals.samples;
    const indexPages = Math.ceil(manifest.index.bytes / manifest.index.pageSize);
    expect(S).toBeGreaterThan(1);
    const [first, second] = report.sides.shards.counters;
    expect(first?.samples).toBe(N);
    expect(first?.opens).toBe(S);
    expect(first?.reads).toBeLessThanOrEqual(N + S + indexPages);
    expect(first?.reads).toBeGreaterThan(0);
    // Second epoch in the same process: the handles are still open.
    expect(second?.opens).toBe(0);
    expect(second?.reads).toBeLessThanOrEqual(N);
    expect(report.dataset.shards).toBe(S);
  });

  it('counts the payload (member bytes) on the shard side too, apart from the bytes read from the shard files', () => {
    const bytes = rawFiles.reduce((n, f) => n + fs.statSync(f).size, 0);
    for (const c of report.sides.shards.counters) {
      expect(c.payloadBytes).toBe(bytes); // packed without passes: the members are the raw files
      expect(c.bytesRead).toBeGreaterThan(c.payloadBytes); // tar headers and padding
    }
    const s = report.sides.shards;
    const payload = [...s.counters.map((c) => c.payloadBytes)].sort((a, b) => a - b);
    expect(s.megabytesPerSecond).toBeCloseTo((payload[0]! + payload[payload.length - 1]!) / 2 / s.medianSeconds / 1e6, 9);
  });

  it.runIf(straceAvailable())('agrees with strace on the raw side, call for call', () => {
    const calls = report.sides.raw.strace?.calls ?? {};
    const opens = (calls.openat ?? 0) + (calls.open ?? 0);
    const stats = (calls.statx ?? 0) + (calls.fstat ?? 0) + (calls.newfstatat ?? 0);
    expect(opens).toBe(rawFiles.length);
    expect(stats).toBe(rawFiles.length);
    expect(calls.close).toBe(rawFiles.length);
    expect(report.sides.shards.strace?.calls.openat).toBe(manifest.shards.length);
  });

  it('reads every data file once before the timed epochs of a warm bench, and records it', () => {
    // the files a read opens: the index and the shards (not shardindex.json, which is for wids and WebDataset)
    const shardFiles = fs.readdirSync(ds).filter((f) => f !== 'manifest.json' && f !== 'pack-report.json' && f !== 'shardindex.json');
    expect(report.options.cache.mode).toBe('warm');
    expect(report.options.cache.warmUp?.files).toBe(rawFiles.length + shardFiles.length);
    expect(report.options.cache.warmUp?.bytes).toBe([...rawFiles, ...shardFiles.map((f) => path.join(ds, f))].reduce((n, f) => n + fs.statSync(f).size, 0));
    expect(report.options.cache.detail).toMatch(/read once, untimed, before the first timed epoch/);
    for (const side of [report.sides.raw, report.sides.shards]) for (const c of side.counters) expect(c.storageReadBytes === null || c.storageReadBytes >= 0).toBe(true);
  });

  it('writes a report that validates against the schema', () => {
    const ok = validate(JSON.parse(JSON.stringify(report)));
    expect(validate.errors ?? [], JSON.stringify(validate.errors)).toEqual([]);
    expect(ok).toBe(true);
  });
});
