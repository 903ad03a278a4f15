/**
 * The report's charts: vega-lite specs compiled to vega and rendered to SVG strings in Node (renderer 'none',
 * no canvas, no browser), so report.html can inline them and work offline with no script at all.
 *
 * Each chart comes in two layouts, and report.html shows the one that fits the page (test/e2e/report-html.test.ts
 * checks in Chromium at 1400, 1024 and 390 px that no text overlaps another or leaves its chart): 'wide', two
 * charts side by side on a desktop page, and 'narrow', one chart across a phone. Legends sit below the plot and
 * name the sides shortly ("raw files", not the summary's "raw files (open + fstat + read + close per file)"), and
 * subtitles wrap to the chart's width.
 */
import type { TopLevelSpec } from 'vega-lite';
import { medianCounts } from './report-build.js';
import { formatRunEpoch } from './report-format.js';
import type { BenchReport, SideResult, ThrottledMeasured } from './report.js';
import { isBold, sansSerifWidth } from './text-width.js';

export interface ChartSpec {
  /** Stable id, also the HTML element id (`chart-<id>`). */
  id: string;
  title: string;
  /** True for charts of projected (modelled) figures. */
  projected: boolean;
  /** True for charts of the epochs measured on an IOPS-limited device. */
  throttled: boolean;
  spec: TopLevelSpec;
}

/** 'wide': two charts side by side on a desktop page; 'narrow': one across a phone's screen. */
export type ChartLayout = 'wide' | 'narrow';
export const CHART_LAYOUTS: readonly ChartLayout[] = ['wide', 'narrow'];

export interface RenderedChart {
  id: string;
  title: string;
  projected: boolean;
  throttled: boolean;
  /** One SVG per layout. */
  svg: Record<ChartLayout, string>;
}

const SIDE_COLOURS: Record<string, string> = { raw: '#d95f02', shards: '#1b9e77', lmdb: '#7570b3' };
const OP_COLOURS = ['#e6ab02', '#66a61e', '#1f78b4', '#e7298a'];
/** Plot area of each layout (axes, titles and the legend come around it). */
const SIZE: Record<ChartLayout, { width: number; height: number }> = { wide: { width: 420, height: 220 }, narrow: { width: 270, height: 190 } };
const TITLE_FONT_SIZE = 13;
const SUBTITLE_FONT_SIZE = 11;
const BREAK_EVEN_MAX_POINTS = 200;
/** d3-format for bar labels: 3 significant digits, thousands grouped (0.32 MB/s reads 0.32, not 0). */
const VALUE_LABEL_FORMAT = ',.3~r';

function sidesOf(report: BenchReport): SideResult[] {
  return [report.sides.raw, report.sides.shards, ...(report.sides.lmdb ? [report.sides.lmdb] : [])];
}

/** A side's name in a chart: its label up to the parenthesis ("raw files", "shards", "LMDB"); the summary table has the rest. */
export function shortLabel(label: string): string {
  return label.replace(/\s*\(.*$/, '');
}

function sideColour(report: BenchReport): { domain: string[]; range: string[] } {
  const sides = sidesOf(report);
  return { domain: sides.map((s) => shortLabel(s.label)), range: sides.map((s) => SIDE_COLOURS[s.side] ?? '#666') };
}

/** Splits `text` into lines no wider than `px` pixels at `fontSize` (sans-serif), at spaces. */
export function wrapWords(text: string, px: number, fontSize: number, bold = false): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const longer = line === '' ? word : `${line} ${word}`;
    if (line !== '' && sansSerifWidth(longer, fontSize, bold) > px) {
      lines.push(line);
      line = word;
    } else {
      line = longer;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

function base(layout: ChartLayout, title: string, subtitle?: string): Pick<TopLevelSpec, '$schema' | 'title' | 'config'> & { width: number; height: number } {
  const { width, height } = SIZE[layout];
  // the title spans the plot and the y axis (about 50 px); vega does not wrap it
  const px = width + 50;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title:
      subtitle === undefined
        ? { text: wrapWords(title, px, TITLE_FONT_SIZE, true), anchor: 'start', fontSize: TITLE_FONT_SIZE }
        : {
            text: wrapWords(title, px, TITLE_FONT_SIZE, true),
            subtitle: wrapWords(subtitle, px, SUBTITLE_FONT_SIZE),
            anchor: 'start',
            fontSize: TITLE_FONT_SIZE,
            subtitleFontSize: SUBTITLE_FONT_SIZE,
            subtitlePadding: 4,
          },
    width,
    height,
    config: {
      font: 'sans-serif',
      view: { stroke: null },
      axis: { labelFontSize: 11, titleFontSize: 12 },
      legend: { labelFontSize: 11, titleFontSize: 11, orient: 'bottom', direction: 'horizontal', labelLimit: 1000, symbolSize: 80 },
    },
  };
}

function epochTimeChart(report: BenchReport, layout: ChartLayout): ChartSpec {
  const values = sidesOf(report).flatMap((s) => s.epochSeconds.map((seconds, i) => ({ side: shortLabel(s.label), epoch: formatRunEpoch(i, report.options.epochs, true), seconds })));
  const order = [...new Set(values.map((v) => v.epoch))];
  return {
    id: 'epoch-time',
    title: 'Epoch time',
    projected: false,
    throttled: false,
    spec: {
      ...base(layout, 'Epoch time (measured)', 'seconds per epoch, each timed epoch side by side (run / epoch within the run); lower is better'),
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: { field: 'epoch', type: 'ordinal', title: 'run / epoch', sort: order, axis: { labelAngle: 0, labelOverlap: 'parity' } },
        xOffset: { field: 'side', type: 'nominal', scale: { domain: sideColour(report).domain } },
        y: { field: 'seconds', type: 'quantitative', title: 'seconds' },
        color: { field: 'side', type: 'nominal', title: null, scale: sideColour(report) },
      },
    } as TopLevelSpec,
  };
}

function throughputChart(report: BenchReport, layout: ChartLayout): ChartSpec {
  const values = sidesOf(report).flatMap((s) => [
    { side: shortLabel(s.label), metric: 'samples/s', value: s.samplesPerSecond },
    { side: shortLabel(s.label), metric: 'payload MB/s', value: s.megabytesPerSecond },
  ]);
  const { width, height } = SIZE[layout];
  // two panels in the width of one plot; the sides are told apart by colour (legend below), not by x labels,
  // which did not fit under bars this narrow
  const panel = (metric: string): object => ({
    width: Math.floor(width / 2) - 35,
    height,
    transform: [{ filter: { field: 'metric', equal: metric } }],
    layer: [
      { mark: { type: 'bar', tooltip: true }, encoding: { color: { field: 'side', type: 'nominal', title: null, scale: sideColour(report) } } },
      { mark: { type: 'text', dy: -6, fontSize: 10 }, encoding: { text: { field: 'value', type: 'quantitative', format: VALUE_LABEL_FORMAT } } },
    ],
    encoding: {
      x: { field: 'side', type: 'nominal', title: null, sort: null, axis: null },
      y: { field: 'value', type: 'quantitative', title: metric },
    },
  });
  const { width: _w, height: _h, ...header } = base(layout, 'Throughput (measured)', 'median epoch; MB/s of payload (member bytes), the same bytes on every side; higher is better');
  return {
    id: 'throughput',
    title: 'Throughput',
    projected: false,
    throttled: false,
    spec: { ...header, data: { values }, hconcat: [panel('samples/s'), panel('payload MB/s')] } as TopLevelSpec,
  };
}

function latencyCdfChart(report: BenchReport, layout: ChartLayout): ChartSpec {
  const values = sidesOf(report).flatMap((s) => s.latency.cdf.map((p) => ({ side: shortLabel(s.label), ms: Math.max(p.seconds * 1000, 1e-4), fraction: p.fraction })));
  // the bench times each batch (next() to batch in hand), not each sample
  const [unit, units] = report.options.batch === 1 ? ['sample', 'samples'] : ['batch', 'batches'];
  const title = report.options.batch === 1 ? 'Sample wait CDF' : `Batch wait CDF (batches of ${report.options.batch})`;
  return {
    id: 'latency-cdf',
    title,
    projected: false,
    throttled: false,
    spec: {
      ...base(layout, `${title} (measured)`, `${report.sides.shards.latency.what}; further left is better`),
      data: { values },
      mark: { type: 'line', interpolate: 'step-after', point: false, tooltip: true },
      encoding: {
        x: { field: 'ms', type: 'quantitative', title: `${unit} wait (ms, log scale)`, scale: { type: 'log' }, axis: { labelOverlap: 'greedy', labelSeparation: 4 } },
        y: { field: 'fraction', type: 'quantitative', title: `fraction of ${units}`, scale: { domain: [0, 1] } },
        color: { field: 'side', type: 'nominal', title: null, scale: sideColour(report) },
      },
    } as TopLevelSpec,
  };
}

function operationsChart(report: BenchReport, layout: ChartLayout): ChartSpec {
  const ops = ['open', 'stat', 'read', 'close'] as const;
  const values = sidesOf(report).flatMap((s) => {
    const c = medianCounts(s.counters);
    const per = (n: number): number => (c.samples === 0 ? 0 : n / c.samples);
    const counts = { open: c.opens, stat: c.stats, read: c.reads, close: c.closes };
    return ops.map((op, order) => ({ side: shortLabel(s.label), op, order, perSample: per(counts[op]) }));
  });
  return {
    id: 'operations',
    title: 'Operations per sample',
    projected: false,
    throttled: false,
    spec: {
      ...base(layout, 'File operations per sample (measured)', 'median epoch, counted in-process; lower is better'),
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: { field: 'side', type: 'nominal', title: null, sort: null, axis: { labelAngle: 0 } },
        y: { field: 'perSample', type: 'quantitative', title: 'operations per sample', stack: 'zero' },
        color: { field: 'op', type: 'nominal', title: 'operation', scale: { domain: [...ops], range: OP_COLOURS } },
        order: { field: 'order', type: 'quantitative' },
      },
    } as TopLevelSpec,
  };
}

function breakEvenChart(report: BenchReport, layout: ChartLayout): ChartSpec {
  const raw = report.sides.raw.medianSeconds;
  const shards = report.sides.shards.medianSeconds;
  const pack = report.dataset.packSeconds;
  const breakEven = report.comparison.breakEvenEpochs;
  const last = Math.max(5, report.options.epochs, breakEven === null ? 0 : Math.ceil(breakEven * 2));
  const step = Math.max(1, Math.ceil(last / BREAK_EVEN_MAX_POINTS));
  const packLabel = pack === null ? 'shards (pack time unknown)' : 'pack + shards';
  const values: { epochs: number; line: string; seconds: number }[] = [];
  for (let e = 0; e <= last; e += step) {
    values.push({ epochs: e, line: 'raw files', seconds: e * raw });
    values.push({ epochs: e, line: packLabel, seconds: (pack ?? 0) + e * shards });
  }
  const subtitle =
    breakEven === null
      ? pack === null
        ? 'pack time unknown: shards line starts at 0'
        : 'shards are not faster per epoch: packing does not pay off on this machine'
      : `packing pays off after ${breakEven.toFixed(breakEven < 10 ? 2 : 1)} epochs (measured epochs, pack time from the manifest)`;
  return {
    id: 'break-even',
    title: 'Break-even',
    projected: false,
    throttled: false,
    spec: {
      ...base(layout, 'Cumulative time vs epochs', subtitle),
      data: { values },
      mark: { type: 'line', tooltip: true },
      encoding: {
        x: { field: 'epochs', type: 'quantitative', title: 'epochs', axis: { format: 'd', tickMinStep: 1 } },
        y: { field: 'seconds', type: 'quantitative', title: 'cumulative seconds' },
        color: { field: 'line', type: 'nominal', title: null, scale: { domain: ['raw files', packLabel], range: [SIDE_COLOURS.raw!, SIDE_COLOURS.shards!] } },
      },
    } as TopLevelSpec,
  };
}

function projectionChart(report: BenchReport, layout: ChartLayout): ChartSpec {
  // the profile's name up to its parenthesis, as for the sides: the projections table above has the rest
  const values = report.projections.rows.flatMap((row) =>
    sidesOf(report)
      .filter((s) => row.seconds[s.side] !== undefined)
      .map((s) => ({ profile: shortLabel(row.profile.label), side: shortLabel(s.label), seconds: row.seconds[s.side]! })),
  );
  // A log axis has no zero for bars to start from: start them at the decade below the smallest value.
  const positive = values.map((v) => v.seconds).filter((v) => v > 0);
  const floor = 10 ** Math.floor(Math.log10(positive.length > 0 ? Math.min(...positive) : 1e-3));
  const ceil = 10 ** Math.ceil(Math.log10(positive.length > 0 ? Math.max(...positive) : 1));
  for (const v of values) v.seconds = Math.max(v.seconds, floor);
  return {
    id: 'projections',
    title: 'Projected epoch time',
    projected: true,
    throttled: false,
    spec: {
      ...base(layout, 'PROJECTED epoch time by storage (model, not measured)', 'measured operation counts x typical latencies; log scale'),
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: { field: 'profile', type: 'nominal', title: null, sort: null, axis: { labelLimit: 1000 } },
        yOffset: { field: 'side', type: 'nominal', scale: { domain: sideColour(report).domain } },
        x: { field: 'seconds', type: 'quantitative', title: 'projected seconds per epoch (log)', scale: { type: 'log', domain: [floor, ceil] }, stack: null, axis: { labelOverlap: 'greedy', labelSeparation: 4 } },
        x2: { datum: floor },
        color: { field: 'side', type: 'nominal', title: null, scale: sideColour(report) },
      },
    } as TopLevelSpec,
  };
}

/** Epoch time per side inside the throttle group; the title says whether the throttle was confirmed. */
function throttledEpochChart(report: BenchReport, t: ThrottledMeasured, layout: ChartLayout): ChartSpec {
  const sides = [t.sides.raw, t.sides.shards, ...(t.sides.lmdb ? [t.sides.lmdb] : [])];
  const values = sides.flatMap((s) => s.epochSeconds.map((seconds, i) => ({ side: shortLabel(s.label), epoch: formatRunEpoch(i, report.options.epochs, true), seconds })));
  const order = [...new Set(values.map((v) => v.epoch))];
  const limit = `${t.readIops} read IOPS on ${t.devices.map((d) => d.devPath).join(', ')}`;
  return {
    id: 'throttled-epoch-time',
    title: 'Epoch time on an IOPS-limited device',
    projected: false,
    throttled: true,
    spec: {
      ...base(
        layout,
        t.confirmed ? `Epoch time, measured with ${limit}` : `Epoch time, cold cache (throttle to ${limit} NOT confirmed)`,
        `cold cache, each throttled epoch side by side; ${t.mechanism}; lower is better`,
      ),
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: { field: 'epoch', type: 'ordinal', title: 'run / epoch', sort: order, axis: { labelAngle: 0, labelOverlap: 'parity' } },
        xOffset: { field: 'side', type: 'nominal', scale: { domain: sides.map((s) => shortLabel(s.label)) } },
        y: { field: 'seconds', type: 'quantitative', title: 'seconds' },
        color: { field: 'side', type: 'nominal', title: null, scale: sideColour(report) },
      },
    } as TopLevelSpec,
  };
}

/** The report's charts, in display order; the projections chart only when there are profiles, the throttled one only when measured. */
export function chartSpecs(report: BenchReport, layout: ChartLayout = 'wide'): ChartSpec[] {
  const charts = [epochTimeChart(report, layout), throughputChart(report, layout), latencyCdfChart(report, layout), operationsChart(report, layout), breakEvenChart(report, layout)];
  if (report.throttled?.status === 'measured') charts.push(throttledEpochChart(report, report.throttled, layout));
  if (report.projections.rows.length > 0) charts.push(projectionChart(report, layout));
  return charts;
}

/** What vega's text measurement reads of a text item. */
interface TextItem {
  fontSize?: number;
  fontWeight?: unknown;
}

/** Renders one vega-lite spec to an SVG string with no network access (inline data only). */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  // loaded here: importing shardkit (to read, say) does not pay ~0.4 s for the chart libraries
  const [vega, { compile }] = await Promise.all([import('vega'), import('vega-lite')]);
  // vega's documented hook for text measurement without a canvas (vl-convert sets it too): see text-width.ts
  // (vega's typings leave textMetrics out)
  (vega as unknown as { textMetrics: { width: (item: TextItem, text?: unknown) => number } }).textMetrics.width = (item, text) =>
    sansSerifWidth(text == null ? '' : String(text).trim(), item.fontSize ?? 11, isBold(item.fontWeight));
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    // Inline SVG in HTML needs no namespace declarations; dropping them leaves the file free of any URL.
    return svg.replace(/ xmlns(:xlink)?="[^"]*"/g, '');
  } finally {
    view.finalize();
  }
}

/** Every chart in every layout. */
export async function renderCharts(report: BenchReport): Promise<RenderedChart[]> {
  const narrow = chartSpecs(report, 'narrow');
  const out: RenderedChart[] = [];
  for (const [i, chart] of chartSpecs(report, 'wide').entries()) {
    const svg = { wide: await renderSvg(chart.spec), narrow: await renderSvg((narrow[i] as ChartSpec).spec) };
    out.push({ id: chart.id, title: chart.title, projected: chart.projected, throttled: chart.throttled, svg });
  }
  return out;
}
