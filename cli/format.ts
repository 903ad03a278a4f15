/** Small formatting helpers for command output. */
export { formatSize as humanBytes } from '../src/pack/size-arg.js';

export function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** Summary notes on what passes left undone: samples a tag pass found no label for. */
export function passStatsNotes(passStats: Record<string, Record<string, number>>): string[] {
  return Object.entries(passStats)
    .filter(([, s]) => (s.untagged ?? 0) > 0)
    .map(([name, s]) => `${s.untagged} sample${s.untagged === 1 ? '' : 's'} left untagged by pass ${name}`);
}

/** Left-aligned columns. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

/**
 * A key or member name for line-oriented output: as it is, unless it holds a control character (a newline or tab
 * would split one name into two lines or fields) or starts with a double quote; then as a JSON string, which
 * `JSON.parse` turns back into the name.
 */
export function printableName(name: string): string {
  return /[\u0000-\u001f\u007f]/.test(name) || name.startsWith('"') ? JSON.stringify(name) : name;
}
