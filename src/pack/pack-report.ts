/**
 * pack-report.json: how the pack went (time, throughput, walk and pass counters). It sits beside the dataset but
 * is not part of it: it is the one file whose bytes differ between two identical packs (it holds timings), so it
 * is written after the manifest and no reader depends on it. `shardkit bench` reads the pack time from it.
 */
import fs from 'node:fs';
import path from 'node:path';
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
    fs.writeFileSync(path.join(out, PACK_REPORT_FILE), `${JSON.stringify(doc, null, 2)}\n`);
  } catch {
    // the dataset is committed; a missing report only costs the bench its pack time
  }
}

/** Reads the pack time back, or undefined when the report is missing or unreadable. */
export function readPackSeconds(datasetDir: string): number | undefined {
  try {
    const doc = JSON.parse(fs.readFileSync(path.join(datasetDir, PACK_REPORT_FILE), 'utf8')) as { seconds?: unknown };
    return typeof doc.seconds === 'number' ? doc.seconds : undefined;
  } catch {
    return undefined;
  }
}
