/** Small formatting helpers for command output. */
export { formatSize as humanBytes } from '../src/pack/size-arg.js';

/** `1 shard`, `2 shards`: a count and its noun, plural unless the count is one (`noun` + s, or `many`). */
export function count(n: number, noun: string, many = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : many}`;
}

/** An index's pages as info and verify both say them: the header page and the B+-tree pages. */
export function indexPages(treePages: number): string {
  return `${count(treePages + 1, 'index page')} (a header page and ${count(treePages, 'tree page')})`;
}

export function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** Summary notes on what passes left undone: samples a tag pass found no label for (and the old labels it removed). */
export function passStatsNotes(passStats: Record<string, Record<string, number>>): string[] {
  return Object.entries(passStats)
    .filter(([, s]) => (s.untagged ?? 0) > 0)
    .map(([name, s]) => {
      const stale = s.staleClsRemoved ?? 0;
      const removed = stale > 0 ? ` (${stale} of them lost the cls of the class list this pass replaced)` : '';
      return `${s.untagged} sample${s.untagged === 1 ? '' : 's'} left untagged by pass ${name}${removed}`;
    });
}

/** How many skipped inputs a text summary lists; manifest.json (and --json) list them all. */
export const SKIPPED_LINES = 20;

/** The summary's list of skipped inputs, one `  skipped PATH: REASON` line each, at most SKIPPED_LINES of them. */
export function skippedLines(skipped: readonly { path: string; reason: string }[]): string[] {
  const lines = skipped.slice(0, SKIPPED_LINES).map((s) => `  skipped ${printableName(s.path)}: ${s.reason}`);
  if (skipped.length > SKIPPED_LINES) lines.push(`  ... and ${skipped.length - SKIPPED_LINES} more (manifest.json lists them all)`);
  return lines;
}

/** Left-aligned columns. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

/**
 * A key or member name for line-oriented output: as it is, unless it holds a control character or a line break of
 * any kind (a newline or tab would split one name into two lines or fields; Python's `splitlines()` also breaks at
 * C1 controls such as NEL and at U+2028/U+2029) or starts with a double quote; then as a JSON string, with those
 * escaped too (JSON.stringify leaves C1 and U+2028 raw), which `JSON.parse` turns back into the name.
 */
export function printableName(name: string): string {
  if (!UNPRINTABLE.test(name) && !name.startsWith('"')) return name;
  return JSON.stringify(name).replace(/[\u0080-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
