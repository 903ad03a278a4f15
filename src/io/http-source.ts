import type { IncomingMessage } from 'node:http';
import { ErrorCodes, ShardkitError, type ErrorCode } from '../../formats/errors.js';
import type { ByteSource } from './byte-source.js';
import { HttpClient } from './http-client.js';
import type { BodyPlan, HttpClientOptions } from './http-client.js';
import { expectByteRange, expectIntegerInRange } from './io-options.js';
import { redactLocation } from './location.js';

export interface HttpSourceOptions extends HttpClientOptions {
  /**
   * The client (keep-alive agents, retry policy, counters) to send requests with. Share one per dataset so all
   * shards reuse the same connections. Without it the source makes its own from the other options and closes it
   * in close().
   */
  client?: HttpClient;
  /** The size if already known (from the manifest): size() then costs no request. */
  size?: number;
  /**
   * The error code when a reply shows the file at another size than `size`, or than an earlier reply showed, or
   * with another ETag than an earlier reply: the file was replaced under the reader (SHARD_MISMATCH for a shard,
   * INDEX_MISMATCH for an index). HTTP when not given. A smaller file is TRUNCATED either way.
   */
  sizeMismatchCode?: ErrorCode;
}

/** `bytes 0-99/1234` or `bytes 0-99/*` (RFC 9110 §14.4). */
const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;
/** The 416 form: `bytes *\/1234`. */
const UNSATISFIED_RANGE = /^bytes \*\/(\d+)$/;

/**
 * A file behind an http:// or https:// URL, read with `Range: bytes=a-b` requests (presigned URLs work: the query
 * string is sent as is, and size() uses a one-byte ranged GET rather than HEAD, whose signature would differ).
 *
 * Responses: 206 with a Content-Range naming exactly the asked range is success; a 206 that ends early or a 416
 * means the file is shorter (TRUNCATED); 200 means the server ignores Range (HTTP); 404/410 is SHARD_MISSING;
 * 408/429/5xx, resets, refused connections, timeouts and cut-off bodies are retried by the client, then HTTP.
 * Reads keep no per-read state, so any number may be in flight on one source.
 *
 * `name` is the URL without its query string, so credentials in presigned URLs stay out of messages and logs.
 */
export class HttpSource implements ByteSource {
  readonly name: string;
  private readonly url: string;
  private readonly client: HttpClient;
  private readonly ownsClient: boolean;
  private knownSize: number | undefined;
  /**
   * The file's ETag in the first reply that had one (weak or strong, compared weakly): a later reply with another
   * is another version of the file, replaced on the server since, even at the same size.
   */
  private etag: string | undefined;
  private readonly sizeMismatchCode: ErrorCode;
  private sizePromise: Promise<number> | undefined;
  private closed = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(url: string, options: HttpSourceOptions = {}) {
    if (!/^https?:\/\//i.test(url)) {
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        `Expected an http:// or https:// URL but received ${redactLocation(url)}`,
      );
    }
    this.url = url;
    this.name = redactLocation(url);
    if (options.size !== undefined) {
      this.knownSize = expectIntegerInRange('size', options.size, 0, Number.MAX_SAFE_INTEGER);
    }
    this.sizeMismatchCode = options.sizeMismatchCode ?? ErrorCodes.HTTP;
    this.ownsClient = options.client === undefined;
    this.client = options.client ?? new HttpClient(options);
  }

  /** The total size: given, learned from an earlier Content-Range, or from one `Range: bytes=0-0` GET; cached. */
  size(): Promise<number> {
    if (this.closed) return Promise.reject(this.closedError());
    if (this.knownSize !== undefined) return Promise.resolve(this.knownSize);
    if (this.sizePromise === undefined) {
      this.sizePromise = this.track(this.fetchSize());
      // A failed probe (e.g. retries exhausted) may succeed later; do not cache the failure.
      this.sizePromise.catch(() => {
        this.sizePromise = undefined;
      });
    }
    return this.sizePromise;
  }

  read(offset: number, length: number): Promise<Uint8Array> {
    try {
      expectByteRange(this.name, offset, length);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.closed) return Promise.reject(this.closedError());
    if (length === 0) return Promise.resolve(new Uint8Array(0));
    return this.track(this.fetchRange(offset, length));
  }

  /** Stops new reads; reads in flight finish. Closes the client's sockets if the source made its own client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.ownsClient) return;
    await Promise.allSettled([...this.inFlight]);
    this.client.close();
  }

  private async fetchRange(offset: number, length: number): Promise<Uint8Array> {
    const last = offset + length - 1;
    const { body } = await this.client.exchange(this.url, 'GET', { range: `bytes=${offset}-${last}` }, (res) =>
      this.planRange(res, offset, length),
    );
    const stats = this.client.stats;
    if (stats !== undefined) {
      stats.reads++;
      stats.bytesRead += body.length;
    }
    return body;
  }

  private planRange(res: IncomingMessage, offset: number, length: number): BodyPlan {
    const status = res.statusCode ?? 0;
    if (status === 206) {
      const range = parseContentRange(res.headers['content-range']);
      if (range === undefined) {
        const header = String(res.headers['content-range']);
        return { fail: this.httpError(`answered 206 without a valid Content-Range (${header})`) };
      }
      if (range.total !== undefined) {
        // every reply says how large the file is now: a file replaced under the index must not pass for it
        if (this.knownSize !== undefined && range.total !== this.knownSize) return { fail: this.resized(offset, length, range.total) };
        this.knownSize = range.total;
      }
      const changed = this.checkEtag(res, offset);
      if (changed !== undefined) return { fail: changed };
      const encodingProblem = checkEncoding(res);
      if (encodingProblem !== undefined) return { fail: this.httpError(encodingProblem) };
      const wantedLast = offset + length - 1;
      const declared = Number(res.headers['content-length']);
      if (declared > length) return { fail: this.httpError(`announced ${declared} bytes for a range of ${length}`) };
      if (range.first === offset && range.last === wantedLast) return { read: 'exact', length };
      if (range.first === offset && range.last < wantedLast && range.total === range.last + 1) {
        return { fail: this.truncated(offset, length, range.total) };
      }
      return {
        fail: this.httpError(
          `answered bytes ${range.first}-${range.last} to a request for bytes ${offset}-${wantedLast}`,
        ),
      };
    }
    if (status === 416) {
      const total = parseUnsatisfiedTotal(res.headers['content-range']);
      if (total !== undefined && offset + length <= total) {
        return { fail: this.httpError(`answered 416 to bytes ${offset}-${offset + length - 1} of a file it says has ${total} bytes`) };
      }
      // an error reply does not set the size: one odd answer must not replace what the manifest said (a healthy
      // shard stayed broken after it) nor let a shorter replacement pass for the file
      return { fail: this.truncated(offset, length, total) };
    }
    if (status === 200 && isEmptyBody(res)) {
      return { fail: this.truncated(offset, length, 0) }; // nginx answers an empty file's Range requests with 200 and no body
    }
    if (status === 200) {
      return {
        fail: this.httpError(
          'answered 200 with the whole file to a Range request: the server ignores Range; serve the dataset ' +
            'from a server with byte-range support (nginx, S3, GCS, most CDNs)',
        ),
      };
    }
    return planStatus(res, this.name);
  }

  private async fetchSize(): Promise<number> {
    let total: number | undefined;
    await this.client.exchange(this.url, 'GET', { range: 'bytes=0-0' }, (res) => {
      const status = res.statusCode ?? 0;
      if (status === 206) {
        total = parseContentRange(res.headers['content-range'])?.total;
        if (total === undefined) {
          const header = String(res.headers['content-range']);
          return { fail: this.httpError(`gave no total size in Content-Range (${header})`) };
        }
        const changed = this.checkEtag(res, 0);
        if (changed !== undefined) return { fail: changed };
        return { read: 'upTo', maxBytes: 1 };
      }
      if (status === 416) {
        // Only an empty file cannot satisfy bytes=0-0.
        total = parseUnsatisfiedTotal(res.headers['content-range']) ?? 0;
        return { read: 'upTo', maxBytes: 64 * 1024 };
      }
      if (status === 200 && isEmptyBody(res)) {
        total = 0;
        return { read: 'upTo', maxBytes: 0 };
      }
      if (status === 200) {
        return {
          fail: this.httpError('answered 200 to a Range request: the server ignores Range and cannot serve shards'),
        };
      }
      return planStatus(res, this.name);
    });
    if (total === undefined) throw this.httpError('gave no size');
    this.knownSize = total;
    return total;
  }

  private track<R>(promise: Promise<R>): Promise<R> {
    this.inFlight.add(promise);
    const done = (): void => {
      this.inFlight.delete(promise);
    };
    promise.then(done, done);
    return promise;
  }

  private truncated(offset: number, length: number, total: number | undefined): ShardkitError {
    const ends = total === undefined ? 'the file is shorter' : `the file ends at ${total}`;
    return new ShardkitError(
      ErrorCodes.TRUNCATED,
      `${this.name} is truncated: needed ${length} bytes at offset ${offset} but ${ends}; ` +
        're-upload the file or re-pack the dataset',
      { file: this.name, offset },
    );
  }

  /** The error when `res` carries another ETag than the file's earlier replies (remembers the first one seen). */
  private checkEtag(res: IncomingMessage, offset: number): ShardkitError | undefined {
    const header = res.headers.etag;
    if (header === undefined) return undefined;
    const etag = header.trim().replace(/^W\//, ''); // weak comparison (RFC 9110 §8.8.3.2): a CDN may weaken a strong tag
    if (this.etag === undefined) {
      this.etag = etag;
      return undefined;
    }
    if (etag === this.etag) return undefined;
    return new ShardkitError(
      this.sizeMismatchCode,
      `${this.name} changed on the server while it was being read (ETag ${this.etag}, now ${etag}): the file was ` +
        'replaced; open the dataset again, or read it from a copy that does not change',
      { file: this.name, offset },
    );
  }

  /** A reply showed the file at `total` bytes where `knownSize` was expected. */
  private resized(offset: number, length: number, total: number): ShardkitError {
    const known = this.knownSize as number;
    if (total < known) return this.truncated(offset, length, total);
    return new ShardkitError(
      this.sizeMismatchCode,
      `${this.name} is now ${total} bytes where ${known} were expected: the file was replaced; ` +
        'read it from a consistent copy of the dataset (run `shardkit verify`)',
      { file: this.name, offset },
    );
  }

  private httpError(what: string): ShardkitError {
    return new ShardkitError(ErrorCodes.HTTP, `${this.name} ${what}`, { file: this.name });
  }

  private closedError(): ShardkitError {
    return new ShardkitError(ErrorCodes.CLOSED, `${this.name} was closed; open it again to read`, { file: this.name });
  }
}

/**
 * The meaning of a status that is not the expected success, shared with readAll: 404/410 missing, 408/429/5xx
 * transient (honouring a Retry-After in seconds), anything else a plain HTTP error.
 */
export function planStatus(res: IncomingMessage, name: string): BodyPlan {
  const status = res.statusCode ?? 0;
  const text = `${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}`;
  if (status === 404 || status === 410) {
    return {
      fail: new ShardkitError(
        ErrorCodes.SHARD_MISSING,
        `${name} does not exist (HTTP ${text}); check the URL, or upload the missing file`,
        { file: name },
      ),
    };
  }
  if (status === 408 || status === 429 || (status >= 500 && status !== 501 && status !== 505)) {
    return { fail: HttpClient.transient(`HTTP ${text}`, retryAfterMs(res.headers['retry-after'])) };
  }
  const hint = status === 401 || status === 403 ? '; check credentials, or whether a presigned URL expired' : '';
  return { fail: new ShardkitError(ErrorCodes.HTTP, `${name} answered HTTP ${text}${hint}`, { file: name }) };
}

interface ContentRange {
  first: number;
  last: number;
  total: number | undefined;
}

function parseContentRange(header: string | undefined): ContentRange | undefined {
  const match = header === undefined ? null : CONTENT_RANGE.exec(header.trim());
  if (match === null) return undefined;
  const first = Number(match[1]);
  const last = Number(match[2]);
  const total = match[3] === '*' ? undefined : Number(match[3]);
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || last < first) return undefined;
  if (total !== undefined && (!Number.isSafeInteger(total) || last >= total)) return undefined;
  return { first, last, total };
}

function parseUnsatisfiedTotal(header: string | undefined): number | undefined {
  const match = header === undefined ? null : UNSATISFIED_RANGE.exec(header.trim());
  return match === null ? undefined : Number(match[1]);
}

/** Range offsets count encoded bytes: a compressed response would not be the shard's bytes. */
function checkEncoding(res: IncomingMessage): string | undefined {
  const encoding = contentCoding(res);
  return encoding === undefined ? undefined : `answered with Content-Encoding ${encoding}; shards must be served without compression`;
}

/** A response's Content-Encoding when it is one (gzip, br, ...), undefined for none or `identity` (any case: RFC 9110 §8.4.1). */
export function contentCoding(res: IncomingMessage): string | undefined {
  const encoding = res.headers['content-encoding'];
  return encoding === undefined || encoding.trim().toLowerCase() === 'identity' ? undefined : encoding;
}

function isEmptyBody(res: IncomingMessage): boolean {
  return res.headers['content-length'] === '0';
}

function retryAfterMs(header: string | undefined): number | undefined {
  if (header === undefined || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim()) * 1000;
}
