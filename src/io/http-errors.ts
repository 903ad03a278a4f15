/**
 * How the http client tells failures apart: transient ones (another attempt may succeed: a reset, a refused
 * connection, a 5xx, a cut-off body), a request that ran out of its deadline, and the rest (fail at once).
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/** Network errors worth another attempt: the server or the path may come back. */
const TRANSIENT_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
]);

/** A failure that another attempt may fix; the retry loop turns the last one into SHARDKIT_ERR_HTTP. */
export class TransientError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The cause of a request that ran out of its deadline: {@link isHttpDeadline} tells it from other failures. */
export class HttpDeadlineError extends Error {
  constructor(readonly deadlineMs: number) {
    super(`deadline of ${deadlineMs} ms passed`);
  }
}

/** Whether `err` is a request that ran out of its deadline (the server, not the data, failed). */
export function isHttpDeadline(err: unknown): boolean {
  return err instanceof ShardkitError && err.cause instanceof HttpDeadlineError;
}

/** A failed request's error as the retry loop needs it: TransientError when another attempt may succeed. */
export function classifyNetworkError(err: unknown, what: string): Error {
  if (err instanceof TransientError || err instanceof ShardkitError) return err;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code !== undefined && TRANSIENT_NETWORK_CODES.has(code)) {
    return new TransientError(errorText(err), { cause: err });
  }
  return new ShardkitError(ErrorCodes.HTTP, `${what} failed: ${errorText(err)}`, { cause: err });
}

/** An error's message, led by its code (ECONNRESET, ...) when the message does not say it. */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as NodeJS.ErrnoException).code;
  return code !== undefined && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}
