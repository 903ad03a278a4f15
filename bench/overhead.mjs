#!/usr/bin/env node
/**
 * Storage overhead on tiny samples: N samples of one 100-byte member, in the tar and packed layouts:
 * (shards + index) / member bytes - 1, and the shard part alone. Sizes are exact, not timed: one run suffices.
 *
 *   npm run build && node bench/overhead.mjs [--samples 100000] [--size 100]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DatasetWriter } from '../dist/src/pack/dataset-writer.js';

const { values } = parseArgs({ options: { samples: { type: 'string', default: '100000' }, size: { type: 'string', default: '100' } } });
const N = Number(values.samples);
const size = Number(values.size);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-overhead-'));
const rows = [];
for (const layout of ['tar', 'packed']) {
  const dir = path.join(work, layout);
  const w = new DatasetWriter({ dir, layout });
  const body = new Uint8Array(size);
  for (let i = 0; i < N; i++) {
    body[0] = i & 255;
    // keys as a tokenized-text corpus names them: shard directory / document number
    w.add({ key: `docs/${String(Math.floor(i / 10000)).padStart(3, '0')}/${String(i).padStart(8, '0')}`, members: { txt: body } });
  }
  const m = await w.finish();
  const members = m.totals.bytes;
  rows.push({
    layout,
    samples: N,
    memberBytes: members,
    shardBytes: m.totals.shardBytes,
    indexBytes: m.index.bytes,
    shardOverhead: m.totals.shardBytes / members - 1,
    indexBytesPerSample: m.index.bytes / N,
    totalOverhead: (m.totals.shardBytes + m.index.bytes) / members - 1,
  });
}
fs.rmSync(work, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
