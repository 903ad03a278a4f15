#!/usr/bin/env node
/**
 * Calibrates src/read/page-cost.ts: decodes leaves of an index, holds them (with their key tables, as key lookups
 * leave them), and compares what the process holds more (heapUsed + external after a full GC, process.memoryUsage)
 * with decodedPageBytes' estimate of the same pages.
 *
 *   npm run build && node --expose-gc bench/page-cost.mjs <dataset-dir> [--pages 2000] [--no-key-tables]
 *
 * A dataset to try: `node bench/scale.mjs --child pack /tmp/sk-1e6 1000000` (10^6 tiny samples, 24-byte keys).
 */
import fs from 'node:fs';
import path from 'node:path';

if (globalThis.gc === undefined) throw new Error('run with node --expose-gc');
const args = process.argv.slice(2);
const dir = args[0];
const opt = (flag, dflt) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : dflt);
const want = Number(opt('--pages', '2000'));
const keyTables = !args.includes('--no-key-tables');
const { decodePage } = await import('../dist/formats/index-page.js');
const { decodeIndexHeader } = await import('../dist/formats/index-layout.js');
const { buildKeyTable } = await import('../dist/src/read/leaf-key-table.js');
const { decodedPageBytes } = await import('../dist/src/read/page-cost.js');

const file = path.join(dir, 'index.skidx');
const bytes = fs.readFileSync(file);
const header = decodeIndexHeader(bytes.subarray(0, 4096), file, bytes.length);
const size = header.pageSize;
// the raw pages first, so that only decoded pages count in the difference
const raws = [];
for (let p = 1; p < header.pageCount && raws.length < want; p++) raws.push([p, Uint8Array.from(bytes.subarray(p * size, (p + 1) * size))]);
const measure = () => {
  for (let i = 0; i < 3; i++) globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
const held = [];
const before = measure();
for (const [p, raw] of raws) {
  const page = decodePage(raw, p, file, false, header.layout);
  if (page.type !== 'leaf') continue;
  if (keyTables) page.keyTable = buildKeyTable(page.keys);
  held.push(page);
}
const after = measure();
const estimate = held.reduce((t, page) => t + decodedPageBytes(page), 0);
const records = held.reduce((t, page) => t + page.keys.length, 0);
const measured = after - before;
console.log(JSON.stringify({ leaves: held.length, records, keyTables, measuredBytes: measured, estimateBytes: estimate, estimateOverMeasured: Math.round((estimate / measured) * 1000) / 1000, measuredPerRecord: Math.round((measured / records) * 10) / 10, estimatePerRecord: Math.round((estimate / records) * 10) / 10, pageBytesPerRecord: Math.round(((held.length * size) / records) * 10) / 10 }));
