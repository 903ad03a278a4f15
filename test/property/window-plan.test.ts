import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import { planWindowReads, type WindowRequest } from '../../src/read/window-plan.js';
import { SpanWindow } from '../../src/read/window-read.js';
import { countAt } from '../helpers/checked.js';

/**
 * A synthetic packed epoch: shards of records laid out as tar would (a 512-byte header, the span, padding to 512),
 * each shard's records in one or more leaves, positions in key order across shards.
 */
interface Layout {
  shardBytes: number[];
  requests: WindowRequest[]; // by position
}

const HEADER = 512;

function layout(spanLengths: number[][], recordsPerLeaf: number): Layout {
  const shardBytes: number[] = [];
  const requests: WindowRequest[] = [];
  spanLengths.forEach((lengths, shard) => {
    let offset = 0;
    let leaf: LeafPage | undefined;
    lengths.forEach((length, i) => {
      if (i % recordsPerLeaf === 0) {
        const n = Math.min(recordsPerLeaf, lengths.length - i);
        leaf = { type: 'leaf', pageNo: 0, next: 0, simple: true, keys: [], entries: [], rows: new Float64Array(n * RECORD_COLUMNS), memberRows: new Float64Array(0), exts: [], keyTable: undefined };
      }
      const slot = i % recordsPerLeaf;
      const start = offset + HEADER;
      const l = leaf as LeafPage;
      l.rows[slot * RECORD_COLUMNS + RecordColumn.shard] = shard;
      l.rows[slot * RECORD_COLUMNS + RecordColumn.offset] = start;
      l.rows[slot * RECORD_COLUMNS + RecordColumn.length] = length;
      requests.push({ shard, offset: start, length, position: requests.length, leaf: l, slot });
      offset = start + Math.ceil(length / 512) * 512;
    });
    shardBytes.push(offset + 1024);
  });
  return { shardBytes, requests };
}

const layoutArb = fc.record({
  spans: fc.array(fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 60 }), { minLength: 1, maxLength: 5 }),
  recordsPerLeaf: fc.integer({ min: 1, max: 40 }),
});

/** A permutation of 0..n-1 from a seed (Fisher-Yates over a small LCG), optionally with some repeats (padding). */
function order(n: number, seed: number, repeats: number): number[] {
  const out = Array.from({ length: n }, (_, i) => i);
  let x = seed >>> 0;
  for (let i = n - 1; i > 0; i--) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j] as number, out[i] as number];
  }
  return out.concat(out.slice(0, repeats));
}

describe('planWindowReads (read each byte once)', () => {
  it('serves every request once, within its run, and bounds each run\'s waste', () => {
    fc.assert(
      fc.property(
        layoutArb,
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 4096 }),
        fc.integer({ min: 0, max: 64 * 1024 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        ({ spans, recordsPerLeaf }, seed, batch, gapBytes, maxReadBytes, maxWaste) => {
          const { requests } = layout(spans, recordsPerLeaf);
          const picked = order(requests.length, seed, 0).slice(0, batch).map((p) => requests[p] as WindowRequest);
          const upcomingSet = new Set(order(requests.length, seed + 1, 0).slice(0, requests.length >> 1));
          const runs = planWindowReads(picked, (p) => upcomingSet.has(p), { gapBytes, maxReadBytes, maxWaste });
          const served = new Array<number>(picked.length).fill(0);
          const gapPositions = new Set<number>();
          for (const run of runs) {
            expect(run.waste).toBeLessThanOrEqual(maxWaste * (run.length - run.waste) + 1e-9);
            if (run.slices.length > 1) expect(run.length).toBeLessThanOrEqual(Math.max(maxReadBytes, ...run.slices.map((s) => s.length)));
            for (const s of run.slices) {
              countAt(served, s.request);
              const r = picked[s.request] as WindowRequest;
              expect(run.shard).toBe(r.shard);
              expect(run.offset + s.start).toBe(r.offset);
              expect(s.length).toBe(r.length);
              expect(s.start + s.length).toBeLessThanOrEqual(run.length);
            }
            for (const g of run.gapSamples) {
              const r = requests[g.position] as WindowRequest;
              expect(upcomingSet.has(g.position)).toBe(true);
              expect(gapPositions.has(g.position)).toBe(false);
              gapPositions.add(g.position);
              expect(run.offset + g.start).toBe(r.offset);
              expect(g.length).toBe(r.length);
              expect(g.start + g.length).toBeLessThanOrEqual(run.length);
              expect(picked.some((p) => p.position === g.position)).toBe(false);
            }
          }
          expect(served.every((n) => n === 1)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a whole epoch through a SpanWindow fetches at most (1 + maxWaste) x the shards, each sample obtained once', () => {
    fc.assert(
      fc.property(
        layoutArb,
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.integer({ min: 1, max: 32 }),
        fc.integer({ min: 0, max: 300 }),
        fc.constantFrom(0, 0.1, 0.5),
        fc.boolean(),
        ({ spans, recordsPerLeaf }, seed, batchSize, windowSamples, maxWaste, shuffled) => {
          const { shardBytes, requests } = layout(spans, recordsPerLeaf);
          const positions = shuffled ? order(requests.length, seed, 0) : requests.map((_, i) => i);
          const window = new SpanWindow((i) => positions[i] as number, positions.length, windowSamples);
          const obtained = new Array<number>(requests.length).fill(0);
          let fetched = 0;
          for (let first = 0; first < positions.length; first += batchSize) {
            const count = Math.min(batchSize, positions.length - first);
            const toRead: WindowRequest[] = [];
            for (let i = first; i < first + count; i++) {
              const p = positions[i] as number;
              if (window.take(p) !== undefined) countAt(obtained, p);
              else toRead.push(requests[p] as WindowRequest);
            }
            window.advance(first, count);
            for (const run of planWindowReads(toRead, window.upcoming, { gapBytes: 64 * 1024, maxReadBytes: 1 << 20, maxWaste })) {
              fetched += run.length;
              for (const s of run.slices) countAt(obtained, (toRead[s.request] as WindowRequest).position);
              for (const g of run.gapSamples) window.hold(g.position, Promise.resolve(new Uint8Array(g.length)), g.length);
            }
          }
          expect(obtained.every((n) => n === 1)).toBe(true);
          expect(window.heldBytes).toBe(0);
          expect(fetched).toBeLessThanOrEqual((1 + maxWaste) * shardBytes.reduce((a, b) => a + b, 0));
        },
      ),
      { numRuns: 300 },
    );
  });
});
