/**
 * report.html opened in a real browser: headless Chromium (Debian package `chromium`) must parse the inline SVG
 * charts into elements with marks, the screenshot must show them in the side colours, and at common page widths
 * no chart text may overlap another or leave its chart, and the page may not scroll sideways. Offline by
 * construction: every network feature Chromium has is switched off, and the page asks for nothing.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { CHART_LAYOUTS, chartSpecs } from '../../src/bench/charts.js';
import { buildReport } from '../../src/bench/report-build.js';
import { renderHtml } from '../../src/bench/render-html.js';
import { writeReport } from '../../src/bench/write-report.js';
import { makeMeasurements } from '../helpers/bench-measurements.js';
import { tmpDir } from '../helpers/tmp.js';
import { hasTool } from '../helpers/tools.js';

const CHROMIUM = process.env.CHROMIUM ?? 'chromium';
// hasTool throws in CI when the browser is missing: there it is a failure, never a skip.
const available = hasTool(CHROMIUM, ['--version']);
if (!available) process.stderr.write(`report-html.test.ts: skipped, ${CHROMIUM} not found (apt-get install chromium)\n`);

function chromium(args: string[]): string {
  const profile = tmpDir('shardkit-chromium-');
  return execFileSync(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      ...args,
    ],
    { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 60_000, stdio: ['ignore', 'pipe', 'ignore'] },
  );
}

/**
 * Marks that would show: bars (vega writes `M x,y h w v h h -w Z`) at least half a pixel wide and tall, and lines
 * of at least three segments. A bar drawn from an impossible baseline (zero on a log axis) has width 0.
 */
function visibleMarks(svg: string): number {
  let n = 0;
  for (const [, d] of svg.matchAll(/aria-roledescription="(?:bar|line mark)"[^>]* d="([^"]+)"/g)) {
    const bar = /^M[^h]*h(-?[\d.e-]+)v(-?[\d.e-]+)/.exec(d!);
    if (bar ? Math.abs(Number(bar[1])) >= 0.5 && Math.abs(Number(bar[2])) >= 0.5 : (d!.match(/L/g) ?? []).length >= 3) n++;
  }
  return n;
}

/** Counts pixels within `tolerance` of an RGB colour. */
async function countColour(png: string, hex: string, tolerance = 12): Promise<number> {
  const target = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let n = 0;
  for (let i = 0; i < data.length; i += info.channels) {
    if (Math.abs(data[i]! - target[0]!) <= tolerance && Math.abs(data[i + 1]! - target[1]!) <= tolerance && Math.abs(data[i + 2]! - target[2]!) <= tolerance) n++;
  }
  return n;
}

/**
 * Injected at the end of a copy of the page (report.html itself has no script): measures, in the browser's own
 * layout, every SVG text that shows (not hidden by display or opacity, not empty) against its SVG's box and
 * against the other texts of that SVG, and the page's width against the window's; writes what it found as JSON
 * into the DOM for --dump-dom.
 */
const LAYOUT_CHECK = `<script>
(() => {
  const shown = (el) => { for (let e = el; e; e = e.parentElement) { const cs = getComputedStyle(e); if (cs.display === 'none' || cs.visibility === 'hidden' || Number(cs.opacity) === 0) return false; } return el.getClientRects().length > 0; };
  const problems = [];
  let texts = 0, svgs = 0;
  for (const svg of document.querySelectorAll('figure svg')) {
    if (!shown(svg)) continue;
    svgs++;
    const box = svg.getBoundingClientRect();
    const chart = svg.closest('figure').id;
    const items = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim() !== '' && shown(t)).map((t) => ({ text: t.textContent.trim(), r: t.getBoundingClientRect() }));
    texts += items.length;
    for (const { text, r } of items) {
      // vega shortens a label that exceeds its limit with an ellipsis
      if (text.endsWith('\u2026')) problems.push(chart + ': "' + text + '" is cut short');
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) problems.push(chart + ': "' + text + '" leaves its chart');
    }
    for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) {
      const a = items[i].r, b = items[j].r;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      // on one line (sharing most of their height), texts need a gap of 2 px to read as two
      const sameLine = h > 0.5 * Math.min(a.height, b.height);
      if ((w > 1 && h > 1) || (sameLine && w > -2)) problems.push(chart + ': "' + items[i].text + '" ' + (w > 1 ? 'overlaps' : 'touches') + ' "' + items[j].text + '"');
    }
    const figure = svg.closest('figure').getBoundingClientRect();
    if (box.right > figure.right + 0.5) problems.push(chart + ': the chart is wider than its place');
  }
  const page = document.documentElement.scrollWidth;
  if (page > innerWidth) problems.push('the page is ' + page + ' px wide in a ' + innerWidth + ' px window');
  const out = parent.document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = JSON.stringify({ width: innerWidth, svgs, texts, problems });
  parent.document.body.append(out);
})();
</script>`;

interface LayoutCheck {
  width: number;
  svgs: number;
  texts: number;
  problems: string[];
}

/**
 * Lays the page out `width` px wide and checks it. The page is the srcdoc of an iframe that wide (headless
 * Chromium makes no window narrower than 500 px, and a phone's is 390), in a page of the same origin, where the
 * check writes what it found.
 */
function layoutAt(html: string, width: number): LayoutCheck {
  const dir = tmpDir();
  const page = join(dir, 'report-checked.html');
  const checked = html.replace('</body>', `${LAYOUT_CHECK}\n</body>`).replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  writeFileSync(page, `<!doctype html><html><body style="margin:0"><iframe style="border:0;width:${width}px;height:900px" srcdoc="${checked}"></iframe></body></html>`);
  // The iframe's script may run before the page has given the iframe its width (a race on a loaded machine): that
  // check saw another layout and says nothing about this one, so the page is checked again (the callers assert
  // the width).
  let check: LayoutCheck | undefined;
  for (let attempt = 0; attempt < 3 && check?.width !== width; attempt++) {
    const dom = chromium(['--window-size=1600,1000', '--hide-scrollbars', '--dump-dom', pathToFileURL(page).href]);
    const json = /<pre id="layout-check">(.*?)<\/pre>/s.exec(dom)?.[1];
    if (json === undefined) throw new Error('the layout check did not run');
    check = JSON.parse(json.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')) as LayoutCheck;
  }
  return check as LayoutCheck;
}

/** A report as a real bench labels its sides (long labels the charts must shorten), with every section. */
function fullReport(seed: number, repeat: number) {
  const m = makeMeasurements(seed, { lmdb: true, strace: true, repeat });
  m.raw.label = 'raw files (open + fstat + read + close per file)';
  m.shards.label = 'shards (shardkit loader)';
  m.lmdb!.label = 'LMDB (lmdb-js, one record per sample)';
  return buildReport(m);
}

describe.skipIf(!available)('report.html in headless Chromium', () => {
  const report = buildReport(makeMeasurements(5, { lmdb: true }));
  const charts = chartSpecs(report);

  it.each([1400, 1024, 390])('lays out at %i px: every chart shows once, no text overlaps another or leaves its chart, no sideways scroll', async (width) => {
    for (const r of [fullReport(5, 3), fullReport(8, 1)]) {
      const check = layoutAt(await renderHtml(r), width);
      expect(check.width).toBe(width);
      // one layout of each chart shows; each chart has a title, axes and a legend: many texts
      expect(check.svgs).toBe(chartSpecs(r).length);
      expect(check.texts).toBeGreaterThan(15 * check.svgs);
      expect(check.problems).toEqual([]);
    }
  });

  it('finds overlapping and clipped text (the check is not vacuous)', async () => {
    // the charts as they were: fixed 430 px SVGs with vega's text estimates, here squeezed into a 250 px column
    const html = (await renderHtml(fullReport(5, 3))).replace('</style>', 'figure.chart svg { width: 250px !important; max-width: none !important; height: 200px !important; } figure.chart text { font-size: 30px !important; }</style>');
    const check = layoutAt(html, 1400);
    expect(check.width).toBe(1400);
    expect(check.problems.some((p) => p.includes('overlaps'))).toBe(true);
    expect(check.problems.some((p) => p.includes('touches'))).toBe(true);
    const cut = layoutAt((await renderHtml(fullReport(5, 3))).replace('>LMDB<', '>LMDB\u2026<'), 1400);
    expect(cut.width).toBe(1400);
    expect(cut.problems.some((p) => p.endsWith('"LMDB\u2026" is cut short'))).toBe(true);
    expect(check.problems.some((p) => p.includes('leaves its chart'))).toBe(true);
    const wide = layoutAt((await renderHtml(fullReport(5, 3))).replace('</style>', 'body { min-width: 2000px; }</style>'), 1024);
    expect(wide.problems.filter((p) => /^the page is 20\d\d px wide in a 1024 px window$/.test(p))).toHaveLength(1);
  });

  it('renders every chart as SVG with marks in the DOM', async () => {
    const dir = tmpDir();
    const { html } = await writeReport(dir, report);
    const dom = chromium(['--dump-dom', pathToFileURL(html).href]);
    // one SVG per chart and layout (the page shows the one that fits)
    expect((dom.match(/<svg\b/g) ?? []).length).toBe(charts.length * CHART_LAYOUTS.length);
    for (const chart of charts) {
      const start = dom.indexOf(`id="chart-${chart.id}"`);
      expect(start, chart.id).toBeGreaterThan(0);
      const svg = dom.slice(start, dom.indexOf('</svg>', start));
      // vega draws marks as groups of class "mark-<type> role-mark" holding one path per bar or line.
      expect(svg, chart.id).toMatch(/class="mark-(rect|line) role-mark[^"]*"/);
      expect(visibleMarks(svg), chart.id).toBeGreaterThan(0);
      expect(svg, chart.id).toMatch(/role-axis/);
    }
    // Side labels and the projected section made it to the page.
    expect(dom).toContain('PROJECTED');
    expect(dom).toContain(report.sides.raw.label);
  });

  it('paints the charts (screenshot shows the side colours)', async () => {
    const dir = tmpDir();
    const { html } = await writeReport(dir, report);
    const png = join(dir, 'report.png');
    chromium(['--hide-scrollbars', '--window-size=1280,4200', `--screenshot=${png}`, pathToFileURL(html).href]);
    const meta = await sharp(readFileSync(png)).metadata();
    expect(meta.width).toBe(1280);
    // Raw bars/lines in orange, shards in green, lmdb in purple: hundreds of pixels each if the charts drew.
    for (const colour of ['#d95f02', '#1b9e77', '#7570b3']) expect(await countColour(png, colour), colour).toBeGreaterThan(500);
  });
});
