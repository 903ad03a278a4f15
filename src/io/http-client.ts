import { setMaxListeners } from 'node:events';
import type http from 'node:http';
import type https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type tls from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectIntegerInRange } from './io-options.js';
import type { IoStats } from './io-stats.js';
import { BodyCollector, type BodyPlan } from './http-body.js';
import { classifyNetworkError, errorText, HttpDeadlineError, TransientError } from './http-errors.js';
import { isRemote, redactLocation } from './location.js';

export type { BodyPlan } from './http-body.js';
export { HttpDeadlineError, isHttpDeadline } from './http-errors.js';

/**
 * node:http, node:https and node:tls, loaded with the first client: a process that reads local datasets only never
 * needs them (about 10 ms of its start-up, measured by bench/startup.mjs).
 */
let net: { http: typeof http; https: typeof https; tls: typeof tls } | undefined;
function netModules(): { http: typeof http; https: typeof https; tls: typeof tls } {
  if (net === undefined) {
    const requireBuiltin = createRequire(import.meta.url);
    net = { http: requireBuiltin('node:http'), https: requireBuiltin('node:https'), tls: requireBuiltin('node:tls') };
  }
  return net;
}

export const DEFAULT_HTTP_RETRIES = 4;
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
export const DEFAULT_HTTP_DEADLINE_MS = 120_000;
export const DEFAULT_HTTP_BACKOFF_MS = 100;
export const DEFAULT_HTTP_MAX_BACKOFF_MS = 10_000;
export const DEFAULT_HTTP_MAX_SOCKETS = 16;

export interface HttpClientOptions {
  /** Sockets per host kept alive and reused (node Agent maxSockets). Default 16. */
  maxSockets?: number;
  /** Retries after a 5xx/408/429, a reset or refused connection, a timeout, or a cut-off body. Default 4. */
  retries?: number;
  /** An attempt fails when no byte arrives for this long (connect, headers or body). Default 30000. */
  timeoutMs?: number;
  /**
   * Every request, its retries and backoff waits included, ends within this long: a server that answers a byte at
   * a time just often enough to keep an attempt alive fails here (HTTP, not retried). Default 120000. The CLI's
   * `--timeout` sets it.
   */
  deadlineMs?: number;
  /** First retry waits about this long; each further retry doubles it, with jitter. Default 100. */
  backoffMs?: number;
  /** Cap on one backoff wait (and on a server's Retry-After). Default 10000. */
  maxBackoffMs?: number;
  /** Extra certificate authorities (PEM) to trust for https, in addition to Node's bundled ones. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Extra request headers (e.g. Authorization). */
  headers?: Record<string, string>;
  /**
   * Presigned URLs: called before every request, each retry included, with the URL of a dataset file as shardkit
   * would request it (the dataset's URL, `/`, the file's name, the dataset URL's query string); returns the URL to
   * request instead. For object stores whose signatures cover each object's path (S3 SigV4 and S3-compatible
   * stores, Google Cloud Storage signed URLs), where one query string cannot serve every file. Errors name the
   * unsigned URL, without its query string. Cache signed URLs in the function when signing is slow; shardkit asks
   * again on each request, so a URL that is about to expire can be replaced. A signer that throws, or has not
   * answered within `timeoutMs`, fails that request (not retried).
   */
  sign?: (url: string) => string | Promise<string>;
  /** Counters for requests sent and retries. */
  stats?: IoStats;
}

/** What the client did, beyond IoStats: how many TCP/TLS connections it had to open (keep-alive misses). */
export interface HttpClientCounters {
  connections: number;
}

export interface HttpExchange {
  readonly response: IncomingMessage;
  readonly body: Buffer;
}

/**
 * Keep-alive HTTP(S) with retries: one pair of pooled agents shared by all sources of a dataset, so 10,000 shards
 * on one host reuse a handful of connections. Sources decide what a response means (see {@link HttpSource});
 * the client sends, times out, retries with exponential backoff and jitter, and counts.
 */
export class HttpClient {
  readonly counters: HttpClientCounters = { connections: 0 };
  private readonly retries: number;
  private readonly timeoutMs: number;
  private readonly deadlineMs: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly headers: Record<string, string>;
  private readonly sign: ((url: string) => string | Promise<string>) | undefined;
  /** The counters this client adds requests and retries to (sources add their reads). */
  readonly stats: IoStats | undefined;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly seenSockets = new WeakSet<object>();
  private closed = false;
  /** Aborted by close(): ends requests still waiting for a socket in the agents' queues, and backoff sleeps. */
  private readonly closing = new AbortController();

  constructor(options: HttpClientOptions = {}) {
    const maxSockets = expectIntegerInRange('maxSockets', options.maxSockets ?? DEFAULT_HTTP_MAX_SOCKETS, 1, 4096);
    this.retries = expectIntegerInRange('retries', options.retries ?? DEFAULT_HTTP_RETRIES, 0, 100);
    this.deadlineMs = expectIntegerInRange('deadlineMs', options.deadlineMs ?? DEFAULT_HTTP_DEADLINE_MS, 1, 86_400_000);
    // an attempt never waits longer than the whole request may take
    this.timeoutMs = Math.min(this.deadlineMs, expectIntegerInRange('timeoutMs', options.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS, 1, 3_600_000));
    this.backoffMs = expectIntegerInRange('backoffMs', options.backoffMs ?? DEFAULT_HTTP_BACKOFF_MS, 0, 3_600_000);
    this.maxBackoffMs = expectIntegerInRange(
      'maxBackoffMs',
      options.maxBackoffMs ?? DEFAULT_HTTP_MAX_BACKOFF_MS,
      0,
      3_600_000,
    );
    this.headers = { ...options.headers };
    if (options.sign !== undefined && typeof options.sign !== 'function') {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a function for sign but received ${typeof options.sign}`);
    }
    this.sign = options.sign;
    this.stats = options.stats;
    const { http, https, tls } = netModules();
    // every request in flight listens on this one signal: a loader with 16+ of them is not a leak (Node warned
    // MaxListenersExceededWarning on stderr)
    setMaxListeners(0, this.closing.signal);
    // LIFO reuses the most recently used socket, so few sockets stay warm and idle ones age out.
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets, scheduling: 'lifo' });
    this.httpsAgent = new https.Agent({
      keepAlive: true,
      maxSockets,
      scheduling: 'lifo',
      ...(options.ca === undefined ? {} : { ca: [...tls.rootCertificates, ...[options.ca].flat()] }),
    });
  }

  /**
   * Sends `method url` with `headers`, asks `plan` what the response head means, and returns the body it asked
   * for; retries transient failures. `plan` may return a {@link HttpClient.transient} error to retry.
   */
  async exchange(
    url: string,
    method: 'GET' | 'HEAD',
    headers: Record<string, string>,
    plan: (response: IncomingMessage) => BodyPlan,
  ): Promise<HttpExchange> {
    const deadline = performance.now() + this.deadlineMs;
    for (let attempt = 0; ; attempt++) {
      const target = this.sign === undefined ? url : await this.signed(url);
      if (this.closed) throw this.closedError(url);
      try {
        return await this.exchangeOnce(url, target, method, headers, plan, deadline);
      } catch (err) {
        // close() destroys the sockets: what that breaks is not retried on new ones
        if (this.closed) throw this.closedError(url);
        if (!(err instanceof TransientError)) throw err;
        if (attempt >= this.retries) {
          throw new ShardkitError(
            ErrorCodes.HTTP,
            `${method} ${redactLocation(url)} failed after ${attempt + 1} attempt(s): ${err.message}`,
            { file: redactLocation(url), cause: err.cause ?? err },
          );
        }
        const delay = this.backoffDelay(attempt, err.retryAfterMs);
        // no attempt could finish in time after this wait: fail now, not at the deadline
        if (performance.now() + delay >= deadline) throw this.deadlineError(method, url, `${attempt + 1} attempt(s); the last: ${err.message}`);
        if (this.stats !== undefined) this.stats.retries++;
        try {
          await sleep(delay, undefined, { signal: this.closing.signal });
        } catch {
          throw this.closedError(url); // close() during the backoff: the read fails now, not when the sleep ends
        }
      }
    }
  }

  /**
   * The URL `sign` gives for `url`: an http(s) URL, else INVALID_ARG. A signer that throws, or has not answered
   * within timeoutMs, fails the request (HTTP, not retried: the signer is the caller's code). What it returned is
   * never quoted: it may hold a signature.
   */
  private async signed(url: string): Promise<string> {
    const sign = this.sign as (url: string) => string | Promise<string>;
    const name = redactLocation(url);
    let timer: NodeJS.Timeout | undefined;
    let target: unknown;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms (timeoutMs)`)), this.timeoutMs);
      });
      target = await Promise.race([sign(url), timeout]);
    } catch (err) {
      throw new ShardkitError(ErrorCodes.HTTP, `signing ${name} failed: ${errorText(err)}`, { file: name, cause: err });
    } finally {
      clearTimeout(timer);
    }
    if (typeof target !== 'string' || !isRemote(target)) {
      const got = typeof target === 'string' ? 'a string that is not an http(s) URL' : typeof target;
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected sign to return an http(s) URL for ${name} but received ${got}`);
    }
    return target;
  }

  /** An error for `plan` to return when another attempt may succeed (5xx, 429, a short body). */
  static transient(message: string, retryAfterMs?: number): Error {
    return new TransientError(message, retryAfterMs === undefined ? {} : { retryAfterMs });
  }

  /** Closes every pooled socket; requests still in flight fail (CLOSED), and none is sent or retried after. */
  close(): void {
    this.closed = true;
    this.closing.abort();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** The request could not finish within deadlineMs (HTTP; its cause a {@link HttpDeadlineError}). */
  private deadlineError(method: string, url: string, what: string): ShardkitError {
    const name = redactLocation(url);
    return new ShardkitError(
      ErrorCodes.HTTP,
      `${method} ${name} did not finish within ${this.deadlineMs} ms (${what}); the server is down, stalled or too slow: try again later, or allow more time with --timeout (http.deadlineMs)`,
      { file: name, cause: new HttpDeadlineError(this.deadlineMs) },
    );
  }

  private closedError(url: string): ShardkitError {
    const name = redactLocation(url);
    return new ShardkitError(ErrorCodes.CLOSED, `${name}: the dataset was closed while this request was in flight`, { file: name });
  }

  /** Exponential backoff with "equal jitter": half the step fixed, half random, so retries of many readers spread. */
  private backoffDelay(attempt: number, retryAfterMs: number | undefined): number {
    const step = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    const jittered = step / 2 + Math.random() * (step / 2);
    return retryAfterMs === undefined ? jittered : Math.min(this.maxBackoffMs, Math.max(jittered, retryAfterMs));
  }

  /** One attempt at `target` (`url`, signed when there is a signer); messages name `url`. */
  private exchangeOnce(
    url: string,
    target: string,
    method: 'GET' | 'HEAD',
    headers: Record<string, string>,
    plan: (response: IncomingMessage) => BodyPlan,
    deadline: number,
  ): Promise<HttpExchange> {
    return new Promise<HttpExchange>((resolve, reject) => {
      let settled = false;
      let timedOut = false;
      let overall: NodeJS.Timeout | undefined;
      const settle = (err: Error | undefined, value?: HttpExchange): void => {
        if (settled) return;
        settled = true;
        clearTimeout(overall);
        if (err !== undefined) reject(err);
        else resolve(value as HttpExchange);
      };
      const fail = (err: unknown): void => {
        if (timedOut) settle(new TransientError(`no data for ${this.timeoutMs} ms (timeoutMs)`));
        else settle(classifyNetworkError(err, `${method} ${redactLocation(url)}`));
      };

      let request: http.ClientRequest;
      try {
        const isHttps = target.slice(0, 6).toLowerCase() === 'https:';
        const agent = isHttps ? this.httpsAgent : this.httpAgent;
        // the signal also ends a request still queued in the agent for a socket, which destroy() leaves to be sent later
        const options = { method, headers: { ...this.headers, ...headers }, agent, signal: this.closing.signal };
        const { http, https } = netModules();
        request = isHttps ? https.request(target, options) : http.request(target, options);
      } catch (err) {
        const message = `Cannot request ${redactLocation(url)}: ${errorText(err)}`;
        // no cause: Node's URL errors carry the whole URL (`input`), with its credentials or signature
        settle(new ShardkitError(ErrorCodes.INVALID_ARG, message));
        return;
      }
      if (this.stats !== undefined) this.stats.httpRequests++;
      request.on('socket', (socket) => {
        if (!this.seenSockets.has(socket)) {
          this.seenSockets.add(socket);
          this.counters.connections++;
        }
      });
      request.setTimeout(this.timeoutMs, () => {
        timedOut = true;
        request.destroy();
      });
      // the whole request's bound, however the bytes trickle in: progress that never ends is a failure
      overall = setTimeout(() => {
        settle(this.deadlineError(method, url, 'the answer was still coming'));
        request.destroy();
      }, Math.max(0, deadline - performance.now()));
      request.on('error', fail);
      request.on('response', (response) => {
        let bodyPlan: BodyPlan;
        try {
          bodyPlan = plan(response);
        } catch (err) {
          bodyPlan = { fail: err instanceof Error ? err : new Error(String(err)) };
        }
        if ('fail' in bodyPlan) {
          // Dropping the socket is cheaper than draining an unwanted body (a whole shard, for a 200).
          response.destroy();
          settle(bodyPlan.fail);
          return;
        }
        const collector = new BodyCollector(bodyPlan, redactLocation(url));
        response.on('data', (chunk: Buffer) => {
          const err = collector.add(chunk);
          if (err !== undefined) {
            response.destroy();
            settle(err);
          }
        });
        response.on('error', fail);
        response.on('end', () => {
          const result = collector.finish();
          if (result instanceof Error) settle(result);
          else settle(undefined, { response, body: result });
        });
        response.on('close', () => {
          if (!response.complete) fail(new TransientError(`connection closed after ${collector.received} body bytes`));
        });
      });
      request.end();
    });
  }
}

