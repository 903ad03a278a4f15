/**
 * The report's tables as plain rows of strings: report.md and report.html render the same rows, so the two
 * documents always show the same figures in the same order.
 */
import { epochsReadFromStorage } from './report-build.js';
import { formatBytes, formatEpochs, formatNumber, formatPercent, formatRatio, formatRunEpoch, formatSeconds } from './report-format.js';
import type { BenchReport, FirstAndSteady, SideResult, ThrottledSide } from './report.js';

export interface Table {
  title: string;
  /** Shown under the title: what the table is and how it was measured or modelled. */
  caption?: string;
  header: string[];
  rows: string[][];
  /** 'numbers' (default) right-aligns every column but the first; 'text' left-aligns all. */
  align?: 'numbers' | 'text';
}

function sidesOf(report: BenchReport): SideResult[] {
  return [report.sides.raw, report.sides.shards, ...(report.sides.lmdb ? [report.sides.lmdb] : [])];
}

/**
 * Peak RSS, and how much of it is the side's data files mapped into the process: page cache, which a side that
 * reads with read(2) does not count (the shards side maps its shards, LMDB its data.mdb).
 */
const peakRss = (s: SideResult): string =>
  s.mappedDataBytes === null || s.mappedDataBytes === 0 ? formatBytes(s.peakRssBytes) : `${formatBytes(s.peakRssBytes)} (${formatBytes(s.mappedDataBytes)} of it mapped data files)`;

/** A first-epoch / steady-state pair as one cell; steady state left out where every process ran one epoch. */
const firstAndLater = (f: FirstAndSteady): string => (f.steadyState === null ? formatNumber(f.firstEpoch) : `${formatNumber(f.firstEpoch)} / ${formatNumber(f.steadyState)}`);

/** The cache mode as the summary states it: cold not verified, and warm epochs that read from storage, said there. */
function cacheCaption(report: BenchReport): string {
  const c = report.options.cache;
  if (c.mode === 'cold') return `cold cache${c.coldVerified ? '' : ' (NOT verified)'}, ${report.options.epochsPerProcess === 1 ? 'each epoch in a fresh process' : `${report.options.epochsPerProcess} epochs per process`}`;
  const notWarm = sidesOf(report).reduce((n, s) => n + epochsReadFromStorage(s.counters).length, 0);
  return `warm cache${c.warmUp ? ' (every file read once before timing)' : ''}${notWarm > 0 ? `, but ${notWarm} epoch${notWarm === 1 ? '' : 's'} read from storage: NOT warm, see notes` : ''}`;
}

/**
 * `3.24x faster (2.91–3.6x)`: the raw-over-shards time ratio with its min–max over the runs, the ratio being their
 * median so that it lies in the range; without a range, the ratio of the pooled medians (`pooled`).
 */
function ratioCell(report: BenchReport, pooled: number | null, word = ''): string {
  const spread = report.comparison.speedupSpread;
  return spread === null ? `${formatRatio(pooled)}${word}` : `${formatRatio(spread.median)}${word} (${formatNumber(spread.min)}–${formatRatio(spread.max)})`;
}

/** The first table a reader sees: one row per headline figure, one column per side, then shards vs raw. */
export function summaryTable(report: BenchReport): Table {
  const sides = sidesOf(report);
  const { comparison: cmp } = report;
  const spread = cmp.speedupSpread;
  const over =
    spread === null
      ? ''
      : spread.over === 'runs'
        ? `; a time ratio with a range is the median of the ${spread.count} alternated runs' ratios, with their min–max`
        : `; a time ratio with a range is the median of the ratios of the ${spread.count} paired epochs of the one run, with their min–max`;
  const row = (name: string, f: (s: SideResult) => string, vs: string): string[] => [name, ...sides.map(f), vs];
  const steady = cmp.steadyStateSyscallsPerSampleRatio !== null;
  const split = steady ? ', first epoch of a process (opens the shards) / later epochs (steady state)' : ', first epoch of a process (opens the shards)';
  return {
    title: 'Summary (measured)',
    caption: `${report.dataset.samples.toLocaleString('en-US')} samples, ${report.options.epochs} epochs x ${report.options.repeat} runs per side, ${report.options.order} order, batch ${report.options.batch}, concurrency ${report.options.concurrency}, ${cacheCaption(report)}${over}`,
    header: ['', ...sides.map((s) => s.label), 'shards vs raw'],
    rows: [
      row('median epoch', (s) => formatSeconds(s.medianSeconds), ratioCell(report, cmp.speedup, ' faster')),
      row('min / max epoch', (s) => `${formatSeconds(s.minSeconds)} / ${formatSeconds(s.maxSeconds)}`, ''),
      row('samples/s', (s) => formatNumber(s.samplesPerSecond), ratioCell(report, cmp.throughputRatio)),
      row('payload MB/s (member bytes)', (s) => formatNumber(s.megabytesPerSecond), ''),
      row('bytes read from files per epoch (headers, padding, merged reads)', (s) => formatBytes(s.bytesReadPerEpoch), ''),
      row(report.options.batch === 1 ? 'sample wait p50 / p99' : `batch wait p50 / p99 (batches of ${report.options.batch})`, (s) => `${formatSeconds(s.latency.p50)} / ${formatSeconds(s.latency.p99)}`, ''),
      row(`files opened per epoch${split}`, (s) => firstAndLater(s.opensPerEpoch), formatRatio(cmp.opensRatio)),
      row(`syscalls per sample${split}`, (s) => firstAndLater(s.syscallsPerSample), steady ? `${formatRatio(cmp.syscallsPerSampleRatio)} / ${formatRatio(cmp.steadyStateSyscallsPerSampleRatio)}` : formatRatio(cmp.syscallsPerSampleRatio)),
      row('peak RSS', peakRss, ''),
      ['break-even', ...sides.map(() => ''), formatEpochs(cmp.breakEvenEpochs)],
    ],
  };
}

export function datasetTable(report: BenchReport): Table {
  const d = report.dataset;
  return {
    title: 'Dataset',
    header: ['', 'value'],
    align: 'text',
    rows: [
      ['raw directory', d.rawDir],
      ['dataset', d.dataset],
      ['samples / raw files', `${d.samples.toLocaleString('en-US')} / ${d.rawFiles.toLocaleString('en-US')}`],
      ['raw bytes (sum of sizes)', formatBytes(d.rawBytes)],
      ['raw bytes allocated on disk', `${formatBytes(d.rawAllocatedBytes)} (${formatRatio(d.overhead.rawAllocatedVsRaw)} of sizes)`],
      ['shards', `${d.shards} (${formatBytes(d.shardBytes)}, ${formatPercent(d.overhead.shardsVsRaw)} of raw; ${d.layout}, compress ${d.compress})`],
      ['index', `${formatBytes(d.indexBytes)} (${formatPercent(d.overhead.indexVsRaw)} of raw)`],
      ['shards + index vs raw', formatPercent(d.overhead.totalVsRaw)],
      ['pack time', d.packSeconds === null ? 'unknown' : formatSeconds(d.packSeconds)],
    ],
  };
}

export function epochsTable(report: BenchReport): Table {
  const sides = sidesOf(report);
  const n = Math.max(...sides.map((s) => s.epochSeconds.length));
  return {
    title: 'Epoch times (measured)',
    header: ['run / epoch', ...sides.map((s) => s.label)],
    rows: Array.from({ length: n }, (_, i) => [formatRunEpoch(i, report.options.epochs, true), ...sides.map((s) => (s.epochSeconds[i] === undefined ? '' : formatSeconds(s.epochSeconds[i]!)))]),
  };
}

export function countersTable(report: BenchReport): Table {
  const rows: string[][] = [];
  for (const s of sidesOf(report)) {
    s.counters.forEach((c, i) => {
      rows.push([s.label, formatRunEpoch(i, report.options.epochs, true), formatNumber(c.opens), formatNumber(c.stats), formatNumber(c.reads), formatNumber(c.mappedReads), formatNumber(c.closes), formatBytes(c.payloadBytes), formatBytes(c.bytesRead), formatNumber(c.syscallsPerSample)]);
    });
  }
  return {
    title: 'Operations per epoch (measured, counted in-process)',
    header: ['side', 'run / epoch', 'opens', 'stats', 'reads', 'of them mapped', 'closes', 'payload bytes', 'bytes read from files', 'syscalls/sample'],
    rows,
  };
}

export function straceTable(report: BenchReport): Table | null {
  const traced = sidesOf(report).filter((s) => s.strace !== null);
  if (traced.length === 0) return null;
  return {
    title: 'strace -c cross-check (one epoch)',
    caption: 'I/O calls counted by the kernel-side tracer vs the in-process counters; agreement (close left out: shards close at teardown) near 1x means the counters are right',
    header: ['side', 'total syscalls', 'I/O calls per sample', 'agreement', 'top calls'],
    rows: traced.map((s) => {
      const st = s.strace!;
      const top = Object.entries(st.calls)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([name, n]) => `${name} ${formatNumber(n)}`)
        .join(', ');
      return [s.label, formatNumber(st.totalCalls), formatNumber(st.ioCallsPerSample), formatRatio(st.agreement), top];
    }),
  };
}

export function projectionsTable(report: BenchReport): Table {
  const p = report.projections;
  const lmdb = report.sides.lmdb !== undefined;
  return {
    title: 'PROJECTED epoch time on other storage (model, not measured)',
    caption: `Model: ${p.model}. Concurrency ${p.concurrency}. Break-even uses the pack time measured here. Pass your storage's measured figures with --profile FILE.json.`,
    header: ['storage', 'open / stat / read / close (ms)', 'bandwidth', 'raw files', 'shards', ...(lmdb ? ['lmdb'] : []), 'shards vs raw', 'break-even'],
    rows: p.rows.map((r) => {
      const l = r.profile.latencyMs;
      return [
        r.profile.label,
        `${l.open} / ${l.stat} / ${l.read} / ${l.close}`,
        `${formatNumber(r.profile.bandwidthMBps)} MB/s`,
        formatSeconds(r.seconds.raw),
        formatSeconds(r.seconds.shards),
        ...(lmdb ? [r.seconds.lmdb === undefined ? '' : formatSeconds(r.seconds.lmdb)] : []),
        `${formatRatio(r.speedup)} faster`,
        formatEpochs(r.breakEvenEpochs),
      ];
    }),
  };
}

export function runTable(report: BenchReport): Table {
  const m = report.machine;
  const o = report.options;
  return {
    title: 'Run',
    header: ['', 'value'],
    align: 'text',
    rows: [
      ['command', report.command.join(' ')],
      ['date', report.createdAt],
      ['machine', `${m.cpus} CPUs (${m.cpuModel}), ${formatBytes(m.memoryBytes)} RAM, ${m.os.platform} ${m.os.release} ${m.os.arch}`],
      ['software', [`node ${m.node}`, `shardkit ${m.shardkit}`, ...Object.entries(m.versions).map(([k, v]) => `${k} ${v}`)].join(', ')],
      ...(m.filesystem ? [['file systems', `raw: ${m.filesystem.raw}, dataset: ${m.filesystem.dataset}`]] : []),
      ['epochs per run / runs / epochs per process / order / batch / concurrency', `${o.epochs} / ${o.repeat} / ${o.epochsPerProcess} / ${o.order} / ${o.batch} / ${o.concurrency}`],
      ['decode / seed', `${o.decode} / ${o.seed}`],
      ['cache', `${o.cache.mode}; cold verified: ${o.cache.coldVerified ? 'yes' : 'no'}; method: ${o.cache.method}${o.cache.detail ? `; ${o.cache.detail}` : ''}`],
    ],
  };
}

/** The throttled section: measured on an IOPS-limited device, apart from the unthrottled figures and projections. */
export function throttledTable(report: BenchReport): Table | null {
  const t = report.throttled;
  if (t === undefined) return null;
  if (t.status === 'unavailable') {
    return {
      title: `Not measured on an IOPS-limited device (--throttle-iops ${t.readIops})`,
      header: ['', 'value'],
      align: 'text',
      rows: [['why', t.reason]],
    };
  }
  const sides: ThrottledSide[] = [t.sides.raw, t.sides.shards, ...(t.sides.lmdb ? [t.sides.lmdb] : [])];
  const row = (name: string, f: (s: ThrottledSide) => string, vs = ''): string[] => [name, ...sides.map(f), vs];
  const list = (xs: (number | null)[], f: (x: number) => string): string => xs.map((x) => (x === null ? 'n/a' : f(x))).join(' / ');
  return {
    title: t.title,
    caption: `${t.mechanism}, limits ${t.limits.join('; ')}; cold page cache before every epoch; ${t.sides.raw.epochSeconds.length} epochs per side. ${t.confirmation}`,
    header: ['', ...sides.map((s) => s.label), 'shards vs raw'],
    rows: [
      row('median epoch', (s) => formatSeconds(s.medianSeconds), `${formatRatio(t.speedup)} faster`),
      row('min / max epoch', (s) => `${formatSeconds(s.minSeconds)} / ${formatSeconds(s.maxSeconds)}`),
      row('samples/s', (s) => formatNumber(s.samplesPerSecond), formatRatio(t.throughputRatio)),
      row('device reads per epoch (kernel count)', (s) => list(s.deviceReads, formatNumber)),
      row('device bytes per epoch', (s) => list(s.deviceReadBytes, formatBytes)),
      row('achieved read IOPS (limit ' + formatNumber(t.readIops) + ')', (s) => list(s.achievedIops, formatNumber)),
      row('cold cache verified', (s) => (s.coldVerified ? 'yes' : 'NO')),
      row('throttle confirmed', (s) => (s.throttleConfirmed ? 'yes' : 'NO')),
    ],
  };
}
