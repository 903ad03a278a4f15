import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { benchSummary } from '../../cli/commands/bench.js';
import { CHART_LAYOUTS, chartSpecs, renderSvg } from '../../src/bench/charts.js';
import { projectEpoch } from '../../src/bench/profiles.js';
import { renderHtml } from '../../src/bench/render-html.js';
import { renderMarkdown } from '../../src/bench/render-md.js';
import { buildReport, medianCounts, summarizeLatency } from '../../src/bench/report-build.js';
import { formatRatio, formatSeconds } from '../../src/bench/report-format.js';
import { downsampledCdf, percentileSorted } from '../../src/bench/report-stats.js';
import type { BenchReport } from '../../src/bench/report.js';
import { childEpochs } from '../../src/bench/run-bench.js';
import { writeReport } from '../../src/bench/write-report.js';
import { makeMeasurements } from '../helpers/bench-measurements.js';
import { tmpDir } from '../helpers/tmp.js';

const schemaPath = fileURLToPath(new URL('../../src/bench/report-schema.json', import.meta.url));
const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as object;
// date-time is documentation here: ajv-formats is not a dependency.
const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
const validate = ajv.compile(schema);

/** What report.json holds: the report after a JSON round trip. */
const asJson = (r: BenchReport): unknown => JSON.parse(JSON.stringify(r));

const sortedCopy = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);
function medianOf(xs: readonly number[]): number {
  const s = sortedCopy(xs);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

describe('buildReport', () => {
  for (const seed of [1, 2, 3]) {
    it(`derives every figure from the measurements (seed ${seed})`, () => {
      const input = makeMeasurements(seed, { epochs: 2 + seed, lmdb: seed === 2 });
      const report = buildReport(input);
      for (const name of ['raw', 'shards'] as const) {
        const m = input[name];
        const s = report.sides[name];
        expect(s.medianSeconds).toBeCloseTo(medianOf(m.epochSeconds), 12);
        expect(s.minSeconds).toBe(Math.min(...m.epochSeconds));
        expect(s.maxSeconds).toBe(Math.max(...m.epochSeconds));
        const samples = medianOf(m.counters.map((c) => c.samples));
        expect(s.samplesPerSecond).toBeCloseTo(samples / s.medianSeconds, 9);
        expect(s.megabytesPerSecond).toBeCloseTo(medianOf(m.counters.map((c) => c.payloadBytes)) / s.medianSeconds / 1e6, 9);
        expect(s.bytesReadPerEpoch).toBe(medianOf(m.counters.map((c) => c.bytesRead)));
        const sorted = sortedCopy(m.latenciesSeconds);
        expect(s.latency.p50).toBe(sorted[Math.ceil(0.5 * sorted.length) - 1]);
        expect(s.latency.p99).toBe(sorted[Math.ceil(0.99 * sorted.length) - 1]);
        expect(s.latency.max).toBe(sorted[sorted.length - 1]);
        s.counters.forEach((c, i) => {
          const raw = m.counters[i]!;
          expect(c.syscallsPerSample).toBeCloseTo((raw.opens + raw.reads - raw.mappedReads + raw.stats + raw.closes) / raw.samples, 12);
        });
      }
      const { raw, shards } = report.sides;
      expect(report.comparison.speedup).toBeCloseTo(raw.medianSeconds / shards.medianSeconds, 12);
      expect(report.comparison.breakEvenEpochs).toBeCloseTo(input.dataset.packSeconds! / (raw.medianSeconds - shards.medianSeconds), 9);
      expect(report.dataset.overhead.shardsVsRaw).toBeCloseTo(input.dataset.shardBytes / input.dataset.rawBytes, 12);
      expect(report.sides.lmdb !== undefined).toBe(seed === 2);
      // Projections price the measured per-epoch medians with each profile.
      expect(report.projections.projected).toBe(true);
      expect(report.projections.rows.map((r) => r.profile.name)).toEqual(input.profiles.map((p) => p.name));
      for (const row of report.projections.rows) {
        expect(row.seconds.raw).toBeCloseTo(projectEpoch(medianCounts(raw.counters), row.profile, input.options.concurrency), 12);
        expect(row.seconds.shards).toBeCloseTo(projectEpoch(medianCounts(shards.counters), row.profile, input.options.concurrency), 12);
        expect(row.speedup).toBeCloseTo(row.seconds.raw / row.seconds.shards, 12);
      }
      expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    });
  }

  it('has no break-even when shards are slower or pack time is unknown, and still validates', () => {
    const input = makeMeasurements(7, { packSeconds: null });
    expect(buildReport(input).comparison.breakEvenEpochs).toBeNull();
    const slower = makeMeasurements(8);
    slower.shards.epochSeconds = slower.raw.epochSeconds.map((s) => s * 2);
    const report = buildReport(slower);
    expect(report.comparison.breakEvenEpochs).toBeNull();
    expect(report.comparison.speedup).toBeLessThan(1);
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('computes MB/s from the payload on every side and shows bytes read from files apart', () => {
    const input = makeMeasurements(12, { epochs: 1, samples: 100 });
    input.raw.epochSeconds = [2];
    input.shards.epochSeconds = [0.5];
    const same = { samples: 100, opens: 0, reads: 100, mappedReads: 0, stats: 0, closes: 0, storageReadBytes: null };
    input.raw.counters = [{ ...same, bytesRead: 1_000_000, payloadBytes: 1_000_000 }];
    // tar headers, padding and merged spans: three times the payload read from the shard files
    input.shards.counters = [{ ...same, bytesRead: 3_000_000, payloadBytes: 1_000_000 }];
    const report = buildReport(input);
    expect(report.sides.raw.megabytesPerSecond).toBe(0.5);
    expect(report.sides.shards.megabytesPerSecond).toBe(2);
    expect(report.sides.shards.bytesReadPerEpoch).toBe(3_000_000);
    expect(report.sides.raw.bytesReadPerEpoch).toBe(1_000_000);
    const md = renderMarkdown(report);
    expect(md).toMatch(/\| payload MB\/s \(member bytes\) \| 0\.5 \| 2 \|/);
    expect(md).toMatch(/\| bytes read from files per epoch \(headers, padding, merged reads\) \| 977 KiB \| 2\.86 MiB \|/);
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('records the warm-up read and flags every warm epoch that still read from storage', () => {
    const input = makeMeasurements(13, { epochs: 2, samples: 100 });
    input.options.cache = { mode: 'warm', coldVerified: false, method: 'none', warmUp: { files: 201, bytes: 20_000_000, seconds: 0.25 } };
    const c = { samples: 100, opens: 0, reads: 100, mappedReads: 0, stats: 0, closes: 0, payloadBytes: 100_000_000 };
    // raw epoch 2: 5 MB from storage, above 1 MiB and 1 % of 100 MB; shards: 2 MB is under 1 % of 300 MB
    input.raw.counters = [{ ...c, bytesRead: 100_000_000, storageReadBytes: 0 }, { ...c, bytesRead: 100_000_000, storageReadBytes: 5_000_000 }];
    input.shards.counters = [{ ...c, bytesRead: 300_000_000, storageReadBytes: 2_000_000 }, { ...c, bytesRead: 300_000_000, storageReadBytes: null }];
    const report = buildReport(input);
    const flagged = report.notes.filter((n) => n.startsWith('NOT warm'));
    expect(flagged).toHaveLength(1);
    expect(flagged[0]).toContain('NOT warm: raw epochs read from storage although --cache warm (run 1 / epoch 2 5.0 MB;');
    expect(renderMarkdown(report)).toContain('warm cache (every file read once before timing), but 1 epoch read from storage: NOT warm, see notes');
    expect(report.options.cache.warmUp).toEqual({ files: 201, bytes: 20_000_000, seconds: 0.25 });
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    // 1 MiB is the floor: a small epoch's few hundred KB of read-ahead is not flagged
    input.raw.counters = input.raw.counters.map((k) => ({ ...k, bytesRead: 1000, storageReadBytes: 1 << 20 }));
    expect(buildReport(input).notes.some((n) => n.startsWith('NOT warm'))).toBe(false);
  });

  it('records --repeat and labels every timed epoch with its run and its epoch within the run', () => {
    const report = buildReport(makeMeasurements(15, { epochs: 2, repeat: 2 }));
    expect(report.options.epochs).toBe(2);
    expect(report.options.repeat).toBe(2);
    expect(report.sides.raw.epochSeconds).toHaveLength(4);
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    const md = renderMarkdown(report);
    expect(md).toContain('2 epochs x 2 runs per side');
    const epochRows = md.split('## Epoch times (measured)')[1]!.split('\n\n')[1]!.split('\n').slice(2);
    expect(epochRows.map((r) => r.split(' | ')[0])).toEqual(['| 1 / 1', '| 1 / 2', '| 2 / 1', '| 2 / 2']);
    expect(md).toMatch(/\| shards \| 2 \/ 1 \|/);
    const chart = chartSpecs(report).find((c) => c.id === 'epoch-time')!.spec as { data: { values: { epoch: string }[] } };
    expect([...new Set(chart.data.values.map((v) => v.epoch))]).toEqual(['1 / 1', '1 / 2', '2 / 1', '2 / 2']);
  });

  it('gives syscalls per sample one definition everywhere: first epoch of a process and steady state, apart', () => {
    const input = makeMeasurements(16, { epochs: 2, repeat: 2, samples: 100 });
    input.options.cache = { mode: 'warm', coldVerified: false, method: 'none' };
    input.options.epochsPerProcess = 2;
    const c = { samples: 100, bytesRead: 1e6, payloadBytes: 1e6, storageReadBytes: 0 };
    input.raw.counters = Array.from({ length: 4 }, () => ({ ...c, opens: 100, stats: 100, reads: 100, mappedReads: 0, closes: 100 }));
    // each process's first epoch opens 2 files (index, shard) and reads 2 headers; later epochs copy out of the map
    const first = { ...c, opens: 2, stats: 2, reads: 102, mappedReads: 0, closes: 0 };
    const later = { ...c, opens: 0, stats: 0, reads: 100, mappedReads: 100, closes: 0 };
    input.shards.counters = [first, later, first, later];
    const report = buildReport(input);
    expect(report.sides.shards.syscallsPerSample).toEqual({ firstEpoch: 1.06, steadyState: 0 });
    expect(report.sides.raw.syscallsPerSample).toEqual({ firstEpoch: 4, steadyState: 4 });
    expect(report.sides.shards.opensPerEpoch).toEqual({ firstEpoch: 2, steadyState: 0 });
    expect(report.comparison.syscallsPerSampleRatio).toBeCloseTo(0.265, 12);
    expect(report.comparison.steadyStateSyscallsPerSampleRatio).toBe(0);
    expect(report.comparison.opensRatio).toBe(0.02);
    const md = renderMarkdown(report);
    expect(md).toContain('| syscalls per sample, first epoch of a process (opens the shards) / later epochs (steady state) | 4 / 4 | 1.06 / 0 | 0.265x / 0x |');
    expect(md).toContain('| files opened per epoch, first epoch of a process (opens the shards) / later epochs (steady state) | 100 / 100 | 2 / 0 | 0.02x |');
    const cli = benchSummary(report);
    expect(cli).toMatch(/^shards +\S+ \[\S+\] +\d+ +[\d.]+ +1\.06 \/ 0\.00 +2 \/ 0 /m);
    expect(cli).toContain('0.265x the syscalls per sample in a process\'s first epoch (0.000x in later epochs)');
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    // one epoch per process (cold): no steady state to report
    input.options.epochsPerProcess = 1;
    const cold = buildReport(input);
    expect(cold.sides.shards.syscallsPerSample).toEqual({ firstEpoch: 0.53, steadyState: null });
    expect(cold.comparison.steadyStateSyscallsPerSampleRatio).toBeNull();
  });

  it('charts say what was timed (batch waits) and label small rates with their digits', async () => {
    const input = makeMeasurements(17);
    input.raw.counters = input.raw.counters.map((c) => ({ ...c, payloadBytes: 320_000 }));
    input.raw.epochSeconds = input.raw.epochSeconds.map(() => 1);
    const report = buildReport(input);
    expect(report.sides.raw.megabytesPerSecond).toBe(0.32);
    const charts = chartSpecs(report);
    const cdf = charts.find((c) => c.id === 'latency-cdf')!;
    expect(cdf.title).toBe('Batch wait CDF (batches of 32)');
    expect(JSON.stringify(cdf.spec)).not.toMatch(/Per-sample|fraction of samples/);
    expect(JSON.stringify(cdf.spec)).toContain('fraction of batches');
    const svg = await renderSvg(charts.find((c) => c.id === 'throughput')!.spec);
    expect(svg).toMatch(/>0\.32</);
  });

  it('notes a cold cache that could not be verified', () => {
    const report = buildReport(makeMeasurements(9, { coldVerified: false }));
    expect(report.notes.some((n) => /could not be verified/.test(n))).toBe(true);
    expect(renderMarkdown(report)).toContain('NOT verified');
  });

  it('runs every cold epoch in a fresh process, and the report says so', () => {
    // a process keeps its mapped shards resident through an eviction: a second epoch in it would be warm
    expect(childEpochs('cold', 3)).toEqual([[0], [1], [2]]);
    expect(childEpochs('warm', 3)).toEqual([[0, 1, 2]]);
    const report = buildReport(makeMeasurements(14, { epochs: 3 }));
    expect(report.options.epochsPerProcess).toBe(1);
    expect(renderMarkdown(report)).toContain('cold cache, each epoch in a fresh process');
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    const json = asJson(report) as BenchReport;
    const { epochsPerProcess: _dropped, ...options } = json.options;
    expect(validate({ ...json, options })).toBe(false);
  });

  it('cross-checks strace counts against the in-process counters', () => {
    const input = makeMeasurements(10);
    const report = buildReport(input);
    const calls = input.raw.straceCalls!;
    const c = input.raw.counters[0]!;
    const io = calls.openat! + calls.read! + calls.statx! + calls.close!;
    expect(report.sides.raw.strace?.ioCallsPerSample).toBeCloseTo(io / c.samples, 12);
    // close is out of the agreement: shards close at teardown, after the epoch the counters cover
    expect(report.sides.raw.strace?.agreement).toBeCloseTo((io - calls.close!) / (c.opens + c.reads - c.mappedReads + c.stats), 12);
    expect(buildReport(makeMeasurements(10, { strace: false })).sides.raw.strace).toBeNull();
    // counts that agree, but for the shards the child closes at teardown, after the epoch: agreement is exactly 1
    const teardown = makeMeasurements(10);
    teardown.raw.straceCalls = { ...teardown.raw.straceCalls!, close: teardown.raw.straceCalls!.close! + 3 };
    expect(buildReport(teardown).sides.raw.strace?.agreement).toBe(1);
  });
});

describe('report schema', () => {
  it('rejects a report with a missing or an unknown field', () => {
    const report = asJson(buildReport(makeMeasurements(11))) as Record<string, unknown>;
    const { comparison: _dropped, ...missing } = report;
    expect(validate(missing)).toBe(false);
    expect(validate({ ...report, extra: 1 })).toBe(false);
    const sides = report.sides as Record<string, Record<string, unknown>>;
    expect(validate({ ...report, sides: { ...sides, raw: { ...sides.raw, epochSeconds: [] } } })).toBe(false);
  });

  it('documents every property it declares', () => {
    const undocumented: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const n = node as Record<string, unknown>;
      if (n.properties && typeof n.properties === 'object') {
        for (const [key, child] of Object.entries(n.properties as Record<string, Record<string, unknown>>)) {
          if (typeof child.description !== 'string' && typeof child.$ref !== 'string') undocumented.push(`${path}.${key}`);
          walk(child, `${path}.${key}`);
        }
      }
      for (const key of ['items', 'additionalProperties']) walk(n[key], `${path}[]`);
      if (n.$defs) for (const [k, v] of Object.entries(n.$defs as object)) walk(v, `$defs.${k}`);
    };
    walk(schema, '');
    expect(undocumented).toEqual([]);
  });
});

describe('latency statistics', () => {
  it('percentiles and the downsampled CDF are ordered and end at the maximum', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 10, noNaN: true }), { minLength: 1, maxLength: 3000 }), (xs) => {
        const s = summarizeLatency(xs);
        const sorted = sortedCopy(xs);
        expect(s.count).toBe(xs.length);
        expect(s.p50).toBeLessThanOrEqual(s.p99);
        expect(s.p99).toBeLessThanOrEqual(s.max);
        expect(s.max).toBe(sorted[sorted.length - 1]);
        expect(s.cdf.length).toBeLessThanOrEqual(104);
        expect(s.cdf[s.cdf.length - 1]).toEqual({ seconds: s.max, fraction: 1 });
        for (let i = 1; i < s.cdf.length; i++) {
          expect(s.cdf[i]!.seconds).toBeGreaterThanOrEqual(s.cdf[i - 1]!.seconds);
          expect(s.cdf[i]!.fraction).toBeGreaterThan(s.cdf[i - 1]!.fraction);
        }
        // Every CDF point is true of the data: at least `fraction` of the values are <= its value.
        for (const p of s.cdf) expect(sorted.filter((v) => v <= p.seconds).length / sorted.length).toBeGreaterThanOrEqual(p.fraction - 1e-12);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps the p99 rank in the CDF', () => {
    const sorted = Array.from({ length: 1234 }, (_, i) => i / 1000);
    const p99 = percentileSorted(sorted, 0.99);
    expect(downsampledCdf(sorted).some((p) => p.seconds === p99)).toBe(true);
  });
});

describe('renderers', () => {
  const report = buildReport(makeMeasurements(21, { lmdb: true }));

  it('report.md starts with the summary and shows the measured figures', () => {
    const md = renderMarkdown(report);
    const summaryAt = md.indexOf('## Summary (measured)');
    const projectedAt = md.indexOf('## PROJECTED');
    expect(summaryAt).toBeGreaterThan(0);
    expect(projectedAt).toBeGreaterThan(summaryAt);
    expect(md.indexOf('## Dataset')).toBeGreaterThan(summaryAt);
    for (const s of [report.sides.raw, report.sides.shards, report.sides.lmdb!]) {
      expect(md).toContain(formatSeconds(s.medianSeconds));
      for (const e of s.epochSeconds) expect(md).toContain(formatSeconds(e));
    }
    // the ratio printed with a range is the median of the ratios the range is over
    expect(md).toContain(`${formatRatio(report.comparison.speedupSpread!.median)} faster (`);
    for (const row of report.projections.rows) {
      expect(md).toContain(row.profile.label);
      expect(md).toContain(formatSeconds(row.seconds.raw));
    }
    // Every table row has as many cells as its header.
    for (const block of md.split('\n\n').filter((b) => b.startsWith('|'))) {
      const cells = block.split('\n').map((l) => l.split(/(?<!\\)\|/).length);
      expect(new Set(cells).size).toBe(1);
    }
  });

  it('report.html holds one inline <svg> per chart and loads nothing from anywhere', async () => {
    const html = await renderHtml(report);
    const charts = chartSpecs(report);
    // each chart in both layouts; the style shows the one that fits the page
    expect((html.match(/<svg\b/g) ?? []).length).toBe(charts.length * CHART_LAYOUTS.length);
    for (const c of charts) expect(html).toContain(`id="chart-${c.id}"`);
    expect(html).not.toMatch(/<script\b/i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/<(img|iframe|object|embed)\b/i);
    expect(html).not.toMatch(/\b(src|href|xlink:href)\s*=/i);
    expect(html).not.toMatch(/url\(|@import/i);
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).toContain(formatSeconds(report.sides.shards.medianSeconds));
  });

  it('writeReport writes json, md and html; the json validates', async () => {
    const dir = join(tmpDir(), 'out');
    const paths = await writeReport(dir, report);
    const json = JSON.parse(readFileSync(paths.json, 'utf8')) as unknown;
    expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
    expect(json).toEqual(asJson(report));
    expect(readFileSync(paths.markdown, 'utf8')).toBe(renderMarkdown(report));
    expect(readFileSync(paths.html, 'utf8')).toMatch(/^<!doctype html>/);
  });
});
