/** report.md: tables a researcher pastes into a design review. Summary first, details after, projections apart. */
import { countersTable, datasetTable, epochsTable, projectionsTable, runTable, straceTable, summaryTable, throttledTable } from './report-tables.js';
import type { Table } from './report-tables.js';
import type { BenchReport } from './report.js';
import { nodeModelTable, remoteTable } from './remote-section.js';
import { headline } from './report-spread.js';

/** Escapes what would break a Markdown table cell: pipes and newlines. */
function cell(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

export function markdownTable(t: Table, level = 2): string {
  const lines = [`${'#'.repeat(level)} ${t.title}`, ''];
  if (t.caption) lines.push(`_${cell(t.caption)}_`, '');
  lines.push(`| ${t.header.map(cell).join(' | ')} |`);
  lines.push(`|${t.header.map((_, i) => (i === 0 || t.align === 'text' ? ' --- ' : ' ---: ')).join('|')}|`);
  for (const r of t.rows) lines.push(`| ${r.map(cell).join(' | ')} |`);
  return `${lines.join('\n')}\n`;
}

export function renderMarkdown(report: BenchReport): string {
  const parts = [
    `# shardkit bench: ${report.sides.raw.label} vs ${report.sides.shards.label}\n`,
    `${headline(report).join(' ')}\n`,
    markdownTable(summaryTable(report)),
    markdownTable(datasetTable(report)),
    markdownTable(epochsTable(report)),
    markdownTable(countersTable(report)),
  ];
  const strace = straceTable(report);
  if (strace) parts.push(markdownTable(strace));
  if (report.remote) parts.push(markdownTable(remoteTable(report.remote)));
  const throttled = throttledTable(report);
  if (throttled) parts.push(markdownTable(throttled));
  if (report.projections.rows.length > 0) parts.push(markdownTable(projectionsTable(report)));
  if (report.model) parts.push(markdownTable(nodeModelTable(report.model)));
  parts.push(markdownTable(runTable(report)));
  if (report.notes.length > 0) parts.push(`## Notes\n\n${report.notes.map((n) => `- ${n}`).join('\n')}\n`);
  return parts.join('\n');
}
