/**
 * What the main thread and pack's reader threads (source-worker.ts) say to each other, and errors as messages.
 * Loaded by both sides, so it holds no more than the messages.
 */
import { ShardkitError, isShardkitError, type ErrorCode } from '../../formats/errors.js';
import type { EncodeOptions, SourceBatch, SourceTask } from './source-batches.js';

/**
 * Messages from a reader thread: a batch, with the wall and thread CPU milliseconds of the file reads since its last
 * batch (CPU -1: not measured), or a failure.
 */
export type WorkerMessage = { type: 'batch'; batch: SourceBatch; reading: ReadTimes } | ThreadError;

/** Milliseconds spent reading source files: wall time, and the reading thread's CPU time (-1: not measured). */
export interface ReadTimes {
  wallMs: number;
  cpuMs: number;
}

/** A failure reported by a reader thread. */
export type ThreadError = { type: 'error'; code?: ErrorCode; message: string; file?: string; key?: string };

/**
 * Messages to a reader thread: first how to encode and how many batches it may send ahead of the consumer (a
 * reader may be started before the pack knows); then tasks to read, no more tasks, or one more batch wanted
 * (with buffers to reuse).
 */
export type ReaderMessage =
  | { type: 'init'; encode: EncodeOptions | undefined; ahead: number; verifySource: boolean }
  | { type: 'task'; task: SourceTask }
  | { type: 'end' }
  | { type: 'credit'; chunks: ArrayBuffer[] };

/** An error thrown in a thread, as a message. */
export function toThreadError(err: unknown): ThreadError {
  if (isShardkitError(err)) return { type: 'error', code: err.code, message: err.message, ...(err.file === undefined ? {} : { file: err.file }), ...(err.key === undefined ? {} : { key: err.key }) };
  return { type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) };
}

/** A thread's error message, as the error it was. */
export function threadError(m: ThreadError): Error {
  const details = { ...(m.file === undefined ? {} : { file: m.file }), ...(m.key === undefined ? {} : { key: m.key }) };
  return m.code === undefined ? new Error(m.message) : new ShardkitError(m.code, m.message, details);
}
