/** Small formatting helpers for command output. */
export { formatSize as humanBytes } from '../src/pack/size-arg.js';

export function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** Left-aligned columns. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}
