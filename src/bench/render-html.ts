/**
 * report.html: one self-contained file that works offline. Tables and inline SVG charts rendered in Node; no
 * script, no stylesheet link, no font or image fetched from anywhere.
 */
import { renderCharts } from './charts.js';
import type { RenderedChart } from './charts.js';
import { nodeModelTable, remoteTable } from './remote-section.js';
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
  return `<section><h2>${escapeHtml(t.title)}</h2>${caption}<table class="${t.align === 'text' ? 'text' : 'numbers'}"><thead>${head}</thead><tbody>\n${body}\n</tbody></table></section>`;
}

function chartFigure(c: RenderedChart): string {
  // The SVG carries its own title; the caption only repeats the one thing a reader must not miss.
  const caption = c.projected
    ? '<figcaption>Projected from a model, not measured.</figcaption>'
    : c.throttled
      ? '<figcaption>Measured on an IOPS-limited device (see the table above).</figcaption>'
      : '';
  return `<figure class="chart" id="chart-${escapeHtml(c.id)}" aria-label="${escapeHtml(c.title)}">${c.svg}${caption}</figure>`;
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1240px; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: .3rem .7rem; text-align: right; vertical-align: top; }
table.text td { text-align: left; }
thead th { border-bottom: 2px solid #999; } tbody th { text-align: left; font-weight: 600; }
.caption { color: #555; margin: .2rem 0; font-size: .9rem; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; }
figure.chart { margin: 0; } figure.chart svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .85rem; }
.projected { border: 2px dashed #b06000; padding: .5rem 1rem; background: #fffaf2; }
.projected h2::before { content: "⚠ "; }
.throttled { border: 2px solid #1f78b4; padding: .5rem 1rem; background: #f4f9fd; }
.throttled.unconfirmed { border-color: #b00020; background: #fff4f4; }
`;

export async function renderHtml(report: BenchReport): Promise<string> {
  const charts = await renderCharts(report);
  const measured = charts.filter((c) => !c.projected && !c.throttled);
  const projected = charts.filter((c) => c.projected);
  const throttledCharts = charts.filter((c) => c.throttled);
  const strace = straceTable(report);
  const throttled = throttledTable(report);
  const throttledClass = report.throttled?.status === 'measured' && !report.throttled.confirmed ? 'throttled unconfirmed' : 'throttled';
  const title = `shardkit bench: ${report.sides.raw.label} vs ${report.sides.shards.label}`;
  const sections = [
    htmlTable(summaryTable(report)),
    `<section><h2>Charts (measured)</h2><div class="charts">${measured.map(chartFigure).join('\n')}</div></section>`,
    htmlTable(datasetTable(report)),
    htmlTable(epochsTable(report)),
    htmlTable(countersTable(report)),
    ...(strace ? [htmlTable(strace)] : []),
    ...(report.remote ? [htmlTable(remoteTable(report.remote))] : []),
    ...(throttled ? [`<div class="${throttledClass}" id="throttled">${htmlTable(throttled)}<div class="charts">${throttledCharts.map(chartFigure).join('\n')}</div></div>`] : []),
    ...(report.projections.rows.length > 0
      ? [`<div class="projected">${htmlTable(projectionsTable(report))}<div class="charts">${projected.map(chartFigure).join('\n')}</div></div>`]
      : []),
    ...(report.model ? [`<div class="projected">${htmlTable(nodeModelTable(report.model))}</div>`] : []),
    htmlTable(runTable(report)),
    ...(report.notes.length > 0 ? [`<section><h2>Notes</h2><ul>${report.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul></section>`] : []),
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
