/**
 * The part of pack and derive that is the same: run passes over samples with bounded concurrency, in order, and
 * hand each result to the writer: written, dropped by a pass, or (on bad input) skipped or fatal.
 */
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { memberPath, type Sample } from '../../formats/sample.js';
import type { EncodedSample } from '../../formats/sample-layout.js';
import type { Pass, PassContext } from '../passes/pass.js';
import type { DatasetWriter } from './dataset-writer.js';
import { orderedMap } from './ordered-map.js';
import { runPasses } from './run-passes.js';

export interface PipelineItem {
  /** Name for the manifest's skipped list (source path or key). */
  name: string;
  /** The input sample's key and member extensions, noted for a resume's proof (see input-proof.ts). */
  input?: { key: string; exts: readonly string[] };
  /** Produces the sample (reading it may fail with an input error). */
  load(): Promise<{ sample: Sample; ctx: PassContext }> | { sample: Sample; ctx: PassContext };
}

export interface PipelineCounters {
  samples: number;
  bytes: number;
  skipped: number;
}

/** What became of one input sample, ready for the writer. */
export type Processed = { name: string; bytes: number; input?: PipelineItem['input'] } & ({ kind: 'ok'; sample: Sample } | { kind: 'dropped'; pass: string } | { kind: 'failed'; error: ShardkitError });

/** Input errors a user may choose to skip (a source file too large to hold included); anything else (a bug, the output disk) always stops. */
function isInputError(err: unknown): err is ShardkitError {
  return isShardkitError(err) && (err.code === ErrorCodes.INPUT || err.code === ErrorCodes.INPUT_CHANGED || err.code === ErrorCodes.TOO_LARGE);
}

async function processItem(item: PipelineItem, passes: readonly Pass[]): Promise<Processed> {
  const r = await processItemOnly(item, passes);
  if (item.input !== undefined) r.input = item.input;
  return r;
}

async function processItemOnly(item: PipelineItem, passes: readonly Pass[]): Promise<Processed> {
  let bytes = 0;
  try {
    const { sample, ctx } = await item.load();
    for (const m of Object.values(sample.members)) bytes += m.length;
    const out = await runPasses(sample, passes, ctx);
    return out.kind === 'skip' ? { name: item.name, bytes, kind: 'dropped', pass: out.pass } : { name: item.name, bytes, kind: 'ok', sample: out.sample };
  } catch (err) {
    if (isInputError(err)) return { name: item.name, bytes, kind: 'failed', error: err };
    throw err;
  }
}

export async function runPipeline(
  items: AsyncIterable<PipelineItem>,
  passes: readonly Pass[],
  writer: DatasetWriter,
  options: { concurrency: number; onError: 'fail' | 'skip'; onEach?: (c: PipelineCounters) => void },
): Promise<PipelineCounters> {
  const counters: PipelineCounters = { samples: 0, bytes: 0, skipped: 0 };
  for await (const r of orderedMap(items, options.concurrency, (item) => processItem(item, passes))) {
    settle(r, writer, options.onError, counters);
    if (r.input !== undefined) writer.inputDigest.note(r.input.key, r.input.exts);
    options.onEach?.(counters);
  }
  return counters;
}

/** Hands one result to the writer: written, listed as skipped (`onError: 'skip'`, or dropped by a pass), or thrown. */
export function settle(r: Processed, writer: DatasetWriter, onError: 'fail' | 'skip', counters: PipelineCounters): void {
  if (r.kind === 'ok') {
    try {
      writer.add(r.sample);
    } catch (err) {
      skipRefused(err, r.name, writer, onError, counters);
    }
  } else if (r.kind === 'dropped') writer.skip(r.name, `dropped by pass ${r.pass}`);
  else if (onError === 'skip') {
    writer.skip(r.name, `${r.error.code}: ${r.error.stableMessage ?? r.error.message}`); // a manifest's words are the same every run
    counters.skipped++;
  } else throw stoppedOnInput(r.error, r.name);
  counters.samples++;
  counters.bytes += r.bytes;
}

/**
 * {@link settle} for a sample encoded by a reader: written, or skipped when the layout or index cannot hold it and
 * `onError` is 'skip' (listed as `key.firstExt`, the name made only then). Without a Processed object: the pack's
 * writer calls this for every sample. The writer may keep referencing `encoded.parts` until DatasetWriter.release.
 */
export function settleEncoded(
  key: string,
  firstExt: string,
  encoded: EncodedSample,
  keyBytes: Uint8Array | undefined,
  bytes: number,
  writer: DatasetWriter,
  onError: 'fail' | 'skip',
  counters: PipelineCounters,
): void {
  try {
    writer.addEncoded(key, encoded, true, keyBytes);
  } catch (err) {
    skipRefused(err, memberPath(key, firstExt), writer, onError, counters);
  }
  counters.samples++;
  counters.bytes += bytes;
}

/**
 * {@link settle} for a sample with a file too large to hold, which the writer streams from its source files
 * (DatasetWriter.addStreamed): written, or, on bad input, skipped or thrown as `onError` says.
 */
export function settleStreamed(key: string, exts: readonly string[], paths: readonly string[], writer: DatasetWriter, onError: 'fail' | 'skip', counters: PipelineCounters, verifySource: boolean): void {
  let bytes: number;
  try {
    bytes = writer.addStreamed(key, exts, paths, verifySource);
  } catch (err) {
    if (!isInputError(err)) throw err;
    settle({ name: memberPath(key, exts[0] as string), bytes: 0, kind: 'failed', error: err }, writer, onError, counters);
    return;
  }
  counters.samples++;
  counters.bytes += bytes;
}

/** A sample the layout or index cannot hold (key too long, unsafe name) is bad input like any other: skipped, or thrown. */
function skipRefused(err: unknown, name: string, writer: DatasetWriter, onError: 'fail' | 'skip', counters: PipelineCounters): void {
  if (!isShardkitError(err) || (err.code !== ErrorCodes.TOO_LARGE && err.code !== ErrorCodes.UNSAFE_PATH)) throw err;
  if (onError !== 'skip') throw stoppedOnInput(err, name);
  writer.skip(name, `${err.code}: ${err.stableMessage ?? err.message}`);
  counters.skipped++;
}

/**
 * The error that stops a write on the input `name` (`onError: 'fail'`), saying what can succeed: a resume as it is
 * would fail the same way. `file` is the input, which the journal records (DatasetWriter.abort).
 */
function stoppedOnInput(err: ShardkitError, name: string): ShardkitError {
  return new ShardkitError(
    err.code,
    `${err.message}; fix or remove ${name} and run again with --resume, or add --on-error skip to leave such inputs out (--force starts over)`,
    { file: name, ...(err.key === undefined ? {} : { key: err.key }), cause: err },
  );
}

export function validateConcurrency(concurrency: number): number {
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 4096) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected an integer between 1 and 4096 for concurrency but received ${concurrency}`);
  }
  return concurrency;
}

export function validateOnError(onError: unknown): 'fail' | 'skip' {
  if (onError !== 'fail' && onError !== 'skip') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected "fail" or "skip" for onError but received ${JSON.stringify(onError)}`);
  return onError;
}
