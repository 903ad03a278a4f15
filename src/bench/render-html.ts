/**
 * report.html: one self-contained file that works offline. Tables and inline SVG charts rendered in Node; no
 * script, no stylesheet link, no font or image fetched from anywhere.
 *
 * Conclusion first: a headline sentence with the ratio and its run-to-run spread, the summary, the charts, the
 * throttled and projected sections, the notes; the per-epoch tables are folded under their titles.
 */
import { CHART_LAYOUTS, renderCharts, shortLabel } from './charts.js';
import type { RenderedChart } from './charts.js';
import { nodeModelTable, remoteTable } from './remote-section.js';
import { headline } from './report-spread.js';
import { countersTable, datasetTable, epochsTable, projectionsTable, runTable, straceTable, summaryTable, throttledTable } from './report-tables.js';
import type { Table } from './report-tables.js';
import type { BenchReport } from './report.js';

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function htmlTable(t: Table): string {
  const head = `<tr>${t.header.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr>`;
  const body = t.rows.map((r) => `<tr>${r.map((c, i) => (i === 0 ? `<th scope="row">${escapeHtml(c)}</th>` : `<td>${escapeHtml(c)}</td>`)).join('')}</tr>`).join('\n');
  const caption = t.caption ? `<p class="caption">${escapeHtml(t.caption)}</p>` : '';
  // a table wider than a phone scrolls in its own box; the page itself never scrolls sideways
  return `<h2>${escapeHtml(t.title)}</h2>${caption}<div class="scroll"><table class="${t.align === 'text' ? 'text' : 'numbers'}"><thead>${head}</thead><tbody>\n${body}\n</tbody></table></div>`;
}

function tableSection(t: Table): string {
  return `<section>${htmlTable(t)}</section>`;
}

/** A table folded away under its title: the details a reader opens when the figures above raise a question. */
function foldedTable(t: Table): string {
  const table = htmlTable(t).replace(/^<h2>.*?<\/h2>/, '');
  return `<details><summary><h2>${escapeHtml(t.title)}</h2></summary>${table}</details>`;
}

function chartFigure(c: RenderedChart): string {
  // The SVG carries its own title; the caption only repeats the one thing a reader must not miss.
  const caption = c.projected
    ? '<figcaption>Projected from a model, not measured.</figcaption>'
    : c.throttled
      ? '<figcaption>Measured on an IOPS-limited device (see the table above).</figcaption>'
      : '';
  // both layouts are in the page; the style shows the one that fits (see charts.ts)
  const layouts = CHART_LAYOUTS.map((l) => `<div class="${l}">${c.svg[l]}</div>`).join('');
  return `<figure class="chart" id="chart-${escapeHtml(c.id)}" aria-label="${escapeHtml(c.title)}">${layouts}${caption}</figure>`;
}

/** Below this page width the charts stack one per row, each in its narrow layout. */
const NARROW_PAGE_PX = 760;

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto; max-width: 1180px; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; margin-bottom: .5rem; } h2 { font-size: 1.15rem; margin: 1.6rem 0 .4rem; }
.headline { font-size: 1.05rem; max-width: 60rem; } .headline strong { font-weight: 650; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .4rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: .25rem .6rem; text-align: right; vertical-align: top; }
table.text td { text-align: left; }
thead th { border-bottom: 2px solid #999; } tbody th { text-align: left; font-weight: 600; }
.caption { color: #555; margin: .2rem 0; font-size: .9rem; }
.charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 1.2rem 1.5rem; align-items: start; }
figure.chart { margin: 0; min-width: 0; } figure.chart svg { display: block; max-width: 100%; height: auto; }
figure.chart .narrow { display: none; }
figcaption { color: #555; font-size: .85rem; }
details { margin: .8rem 0; } details > summary { cursor: pointer; } details > summary h2 { display: inline; font-size: 1.05rem; }
.projected { border: 2px dashed #b06000; padding: .5rem 1rem; background: #fffaf2; margin-top: 1.5rem; }
.projected h2::before { content: "⚠ "; }
.throttled { border: 2px solid #1f78b4; padding: .5rem 1rem; background: #f4f9fd; margin-top: 1.5rem; }
.throttled.unconfirmed { border-color: #b00020; background: #fff4f4; }
@media (max-width: 960px) { .charts { grid-template-columns: minmax(0, 1fr); } }
@media (max-width: ${NARROW_PAGE_PX}px) {
  body { padding: 0 .6rem; } table { font-size: 13px; } th, td { padding: .2rem .4rem; }
  figure.chart .wide { display: none; } figure.chart .narrow { display: block; }
  .projected, .throttled { padding: .4rem .5rem; }
}
`;

export async function renderHtml(report: BenchReport): Promise<string> {
  const charts = await renderCharts(report);
  const measured = charts.filter((c) => !c.projected && !c.throttled);
  const projected = charts.filter((c) => c.projected);
  const throttledCharts = charts.filter((c) => c.throttled);
  const strace = straceTable(report);
  const throttled = throttledTable(report);
  const throttledClass = report.throttled?.status === 'measured' && !report.throttled.confirmed ? 'throttled unconfirmed' : 'throttled';
  const title = `shardkit bench: ${shortLabel(report.sides.raw.label)} vs ${shortLabel(report.sides.shards.label)}`;
  const [conclusion, ...rest] = headline(report);
  const sections = [
    `<p class="headline"><strong>${escapeHtml(conclusion ?? '')}</strong> ${rest.map(escapeHtml).join(' ')}</p>`,
    tableSection(summaryTable(report)),
    `<section><h2>Charts (measured)</h2><div class="charts">${measured.map(chartFigure).join('\n')}</div></section>`,
    ...(report.remote ? [tableSection(remoteTable(report.remote))] : []),
    ...(throttled ? [`<div class="${throttledClass}" id="throttled">${htmlTable(throttled)}<div class="charts">${throttledCharts.map(chartFigure).join('\n')}</div></div>`] : []),
    ...(report.projections.rows.length > 0
      ? [`<div class="projected">${htmlTable(projectionsTable(report))}<div class="charts">${projected.map(chartFigure).join('\n')}</div></div>`]
      : []),
    ...(report.model ? [`<div class="projected">${htmlTable(nodeModelTable(report.model))}</div>`] : []),
    ...(report.notes.length > 0 ? [`<section><h2>Notes</h2><ul>${report.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul></section>`] : []),
    tableSection(datasetTable(report)),
    foldedTable(epochsTable(report)),
    foldedTable(countersTable(report)),
    ...(strace ? [foldedTable(strace)] : []),
    foldedTable(runTable(report)),
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${sections.join('\n')}
</body>
</html>
`;
}
