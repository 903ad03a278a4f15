/**
 * pack-report.json: how the pack went (time, throughput, walk and pass counters). It sits beside the dataset but
 * is not part of it: it is the one file whose bytes differ between two identical packs (it holds timings), so it
 * is written after the manifest and no reader depends on it. `shardkit bench` reads the pack time from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { replaceFile } from './replace-file.js';
import type { PackResult } from './pack.js';

export const PACK_REPORT_FILE = 'pack-report.json';

export function writePackReport(out: string, r: PackResult): void {
  const doc = {
    seconds: r.seconds,
    samples: r.manifest.totals.samples,
    sourceBytes: r.sourceBytes,
    storedMemberBytes: r.writer.originalBytes,
    samplesPerSecond: r.seconds > 0 ? r.manifest.totals.samples / r.seconds : 0,
    resumedSamples: r.resumedSamples,
    oversizeSamples: r.writer.oversizeSamples,
    skipped: r.manifest.skipped.length,
    readThreads: r.readThreads,
    native: r.native,
    walk: r.walk,
    passes: r.passStats,
  };
  try {
    replaceFile(path.join(out, PACK_REPORT_FILE), new TextEncoder().encode(`${JSON.stringify(doc, null, 2)}\n`));
  } catch {
    // the dataset is committed; a missing report only costs the bench its pack time
  }
}

/**
 * The pack time the bench may use for break-even: pack-report.json's seconds, or null with the reason. A pack
 * finished with --resume records only the resumed run's seconds, not the time of the run(s) it continued.
 */
export function readPackSeconds(datasetDir: string): { seconds: number | null; why?: string } {
  let doc: { seconds?: unknown; resumedSamples?: unknown; samples?: unknown };
  try {
    doc = JSON.parse(fs.readFileSync(path.join(datasetDir, PACK_REPORT_FILE), 'utf8')) as typeof doc;
  } catch {
    return { seconds: null, why: `${PACK_REPORT_FILE} is missing or unreadable` };
  }
  if (typeof doc.seconds !== 'number') return { seconds: null, why: `${PACK_REPORT_FILE} records no pack time` };
  if (typeof doc.resumedSamples === 'number' && doc.resumedSamples > 0) {
    return {
      seconds: null,
      why: `the pack was finished with --resume (${doc.resumedSamples} of ${typeof doc.samples === 'number' ? doc.samples : '?'} samples written by an earlier, interrupted run): ${PACK_REPORT_FILE}'s ${doc.seconds.toFixed(2)} s cover only the resumed run, so the whole pack time is unknown`,
    };
  }
  return { seconds: doc.seconds };
}
