/**
 * report.html opened in a real browser: headless Chromium (Debian package `chromium`) must parse the inline SVG
 * charts into elements with marks, and the screenshot must show them in the side colours. Offline by
 * construction: every network feature Chromium has is switched off, and the page asks for nothing.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { chartSpecs } from '../../src/bench/charts.js';
import { buildReport } from '../../src/bench/report-build.js';
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

describe.skipIf(!available)('report.html in headless Chromium', () => {
  const report = buildReport(makeMeasurements(5, { lmdb: true }));
  const charts = chartSpecs(report);

  it('renders every chart as SVG with marks in the DOM', async () => {
    const dir = tmpDir();
    const { html } = await writeReport(dir, report);
    const dom = chromium(['--dump-dom', pathToFileURL(html).href]);
    expect((dom.match(/<svg\b/g) ?? []).length).toBe(charts.length);
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
