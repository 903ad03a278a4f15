#!/usr/bin/env node
/**
 * Longer local fuzzing of the hostile-input surfaces (the CI test test/property/fuzz-inputs.test.ts runs the same
 * targets for a few seconds): the tar scanner + adoption rules on random and mutated tars, parseManifest on
 * mutated JSON, and verify (index reader + checker) on mutated index files. Anything but a ShardkitError is a bug:
 * the counterexample is printed and the exit code is 1. Needs `npm run build`.
 *
 *   node bench/fuzz.mjs [--seconds 300] [--seed N]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { isShardkitError } from '../dist/formats/errors.js';
import { parseManifest } from '../dist/formats/manifest.js';
import { TarScanner } from '../dist/formats/tar-scan.js';
import { encodeFileHeader, tarPadding } from '../dist/formats/tar-header.js';
import { classifyEntry } from '../dist/src/adopt/member-rules.js';
import { DatasetWriter, INDEX_FILE } from '../dist/src/pack/dataset-writer.js';
import { verifyDataset } from '../dist/src/verify/verify-dataset.js';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
};
const seconds = arg('--seconds', 300);
const seed = arg('--seed', Date.now() % 2 ** 31);
const perTarget = (seconds * 1000) / 3;

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip'), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('set'), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
  fc.record({ kind: fc.constant('cut'), at: fc.nat() }),
);
function mutate(base, ms) {
  let b = Buffer.from(base);
  for (const m of ms) {
    if (b.length === 0) break;
    const at = m.at % b.length;
    if (m.kind === 'flip') b[at] ^= m.mask;
    else if (m.kind === 'set') b.set(m.bytes.subarray(0, b.length - at), at);
    else b = b.subarray(0, at);
  }
  return b;
}
const onlyShardkit = (fn) => {
  try {
    fn();
  } catch (err) {
    if (!isShardkitError(err)) throw err;
  }
};

const parts = [];
for (const [name, body] of [['a/1.jpg', 'x'.repeat(700)], [`${'p'.repeat(160)}.txt`, 'pax'], ['a/1.cls', '3'], ['b/2.seg.png', 'y'.repeat(5000)]]) {
  parts.push(encodeFileHeader(name, body.length), Buffer.from(body), new Uint8Array(tarPadding(body.length)));
}
parts.push(new Uint8Array(1024));
const tar = Buffer.concat(parts);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-fuzz-'));
const w = new DatasetWriter({ dir, pageSize: 1024, shardBytes: 8192, compress: 'lz4' });
for (let i = 0; i < 500; i++) w.add({ key: `k/${String(i).padStart(4, '0')}`, members: { bin: Buffer.alloc(50 + i, i), txt: Buffer.from(`t${i}`.repeat(i)) } });
await w.finish();
const manifest = fs.readFileSync(path.join(dir, 'manifest.json'));
const index = fs.readFileSync(path.join(dir, INDEX_FILE));

const settings = { seed, interruptAfterTimeLimit: perTarget, numRuns: Number.MAX_SAFE_INTEGER, verbose: 1 };
let failed = false;
const report = async (name, run) => {
  const started = Date.now();
  try {
    await run();
    console.log(`${name}: ok (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  } catch (err) {
    failed = true;
    console.log(`${name}: FAILED (seed ${seed})\n${err.message}`);
  }
};
await report('tar scanner', () =>
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 20000 }), fc.array(mutation, { minLength: 1, maxLength: 8 }).map((ms) => mutate(tar, ms))), fc.integer({ min: 1, max: 4096 }), (bytes, chunk) =>
      onlyShardkit(() => {
        const s = new TarScanner('fuzz.tar', { onEntry: (e) => void classifyEntry(e, { style: 'webdataset' }) });
        for (let i = 0; i < bytes.length && !s.ended; i += chunk) s.push(bytes.subarray(i, i + chunk));
        s.finish();
      }),
    ),
    settings,
  ),
);
await report('parseManifest', () =>
  fc.assert(fc.property(fc.oneof(fc.array(mutation, { minLength: 1, maxLength: 6 }).map((ms) => mutate(manifest, ms).toString('latin1')), fc.json()), (t) => onlyShardkit(() => parseManifest(t, 'm.json'))), settings),
);
await report('verify on mutated index', () =>
  fc.assert(
    fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 6 }), async (ms) => {
      const damaged = mutate(index, ms);
      fs.writeFileSync(path.join(dir, INDEX_FILE), damaged);
      try {
        const r = await verifyDataset(dir);
        if (r.ok !== Buffer.from(damaged).equals(index)) throw new Error(`verify said ok=${r.ok} for ${JSON.stringify(ms)}`);
      } catch (err) {
        if (!isShardkitError(err)) throw err;
      }
    }),
    settings,
  ),
);
fs.rmSync(dir, { recursive: true, force: true });
process.exitCode = failed ? 1 : 0;
