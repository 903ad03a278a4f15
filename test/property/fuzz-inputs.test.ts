/**
 * Fuzzing, time-capped for CI: random and mutated tar bytes, manifests and index files never crash, hang or
 * allocate without bound; only ShardkitErrors come out. bench/fuzz.mjs runs the same targets for longer.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import { parseManifest } from '../../formats/manifest.js';
import { TarScanner } from '../../formats/tar-scan.js';
import { encodeFileHeader, tarPadding } from '../../formats/tar-header.js';
import { classifyEntry } from '../../src/adopt/member-rules.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const BUDGET_MS = 4000; // per target: ~12 s in all

function expectOnlyShardkitErrors(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!isShardkitError(err)) throw err;
  }
}

/** A mutation: flip, overwrite, truncate or splice random bytes. */
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
);

function mutate(base: Uint8Array, ms: { kind: string; at: number; mask?: number; bytes?: Uint8Array }[]): Uint8Array {
  let b = Buffer.from(base);
  for (const m of ms) {
    if (b.length === 0) break;
    const at = m.at % b.length;
    if (m.kind === 'flip') b[at] = (b[at] as number) ^ (m.mask as number);
    else if (m.kind === 'set') b.set((m.bytes as Uint8Array).subarray(0, b.length - at), at);
    else b = b.subarray(0, at);
  }
  return b;
}

let tarBytes: Uint8Array;
let manifestText: string;
let datasetDir: string;
let indexBytes: Buffer;

beforeAll(async () => {
  const parts: Uint8Array[] = [];
  for (const [name, body] of [['a/1.jpg', 'x'.repeat(700)], [`${'p'.repeat(160)}.txt`, 'pax'], ['a/1.cls', '3']] as const) {
    parts.push(encodeFileHeader(name, body.length), Buffer.from(body), new Uint8Array(tarPadding(body.length)));
  }
  parts.push(new Uint8Array(1024));
  tarBytes = Buffer.concat(parts);
  datasetDir = tmpDir();
  const w = new DatasetWriter({ dir: datasetDir, pageSize: 1024, shardBytes: 8192 });
  for (let i = 0; i < 80; i++) w.add({ key: `k/${String(i).padStart(3, '0')}`, members: { bin: Buffer.alloc(50 + i, i) } });
  await w.finish();
  manifestText = fs.readFileSync(path.join(datasetDir, 'manifest.json'), 'utf8');
  indexBytes = fs.readFileSync(path.join(datasetDir, INDEX_FILE));
});

function scanAll(bytes: Uint8Array, chunk: number): void {
  const s = new TarScanner('fuzz.tar', { onEntry: (e) => void classifyEntry(e, { style: 'webdataset' }) });
  for (let i = 0; i < bytes.length && !s.ended; i += chunk) s.push(bytes.subarray(i, i + chunk));
  s.finish();
}

describe('fuzz', () => {
  it('tar scanner on random and mutated tars', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 4096 }), fc.array(mutation, { minLength: 1, maxLength: 6 }).map((ms) => mutate(tarBytes, ms))), fc.integer({ min: 1, max: 2000 }), (bytes, chunk) => {
        expectOnlyShardkitErrors(() => scanAll(bytes, chunk));
      }),
      { interruptAfterTimeLimit: BUDGET_MS, numRuns: 1_000_000 },
    );
  });

  it('parseManifest on mutated JSON', () => {
    const text = fc.oneof(
      fc.array(mutation, { minLength: 1, maxLength: 4 }).map((ms) => Buffer.from(mutate(Buffer.from(manifestText), ms)).toString('latin1')),
      fc.json(),
      fc.string(),
    );
    fc.assert(fc.property(text, (t) => expectOnlyShardkitErrors(() => parseManifest(t, 'm.json'))), { interruptAfterTimeLimit: BUDGET_MS, numRuns: 1_000_000 });
  });

  it('verify (index reader and checker) on mutated index files', async () => {
    const dir = tmpDir();
    for (const f of fs.readdirSync(datasetDir)) fs.copyFileSync(path.join(datasetDir, f), path.join(dir, f));
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (ms) => {
        const damaged = mutate(indexBytes, ms);
        fs.writeFileSync(path.join(dir, INDEX_FILE), damaged);
        try {
          const r = await verifyDataset(dir);
          expect(r.ok).toBe(Buffer.from(damaged).equals(indexBytes));
        } catch (err) {
          if (!isShardkitError(err)) throw err;
        }
      }),
      { interruptAfterTimeLimit: BUDGET_MS, numRuns: 1_000_000 },
    );
  });
});
