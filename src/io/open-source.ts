import { fileURLToPath } from 'node:url';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ByteSource } from './byte-source.js';
import { FileSource } from './file-source.js';
import type { FileSourceOptions } from './file-source.js';
import { HttpClient } from './http-client.js';
import { contentCoding, HttpSource, planStatus } from './http-source.js';
import type { HttpSourceOptions } from './http-source.js';
import { expectIntegerInRange } from './io-options.js';
import type { IoStats } from './io-stats.js';
import { isRemote, redactLocation } from './location.js';

export { isRemote } from './location.js';

/** Options for either kind of source; each kind uses its own and ignores the other's. */
export interface OpenSourceOptions extends FileSourceOptions, Omit<HttpSourceOptions, 'stats'> {
  stats?: IoStats;
}

/**
 * Opens `location`: a FileSource for local paths and file:// URLs (open(2) on the thread pool), an HttpSource for
 * http(s) URLs (no request until the first read or size()). A missing local file fails here with SHARD_MISSING; a
 * missing remote one fails at its first read.
 */
export async function openByteSource(location: string, options: OpenSourceOptions = {}): Promise<ByteSource> {
  if (isRemote(location)) return new HttpSource(location, options);
  return FileSource.open(localPath(location), fileOptions(options));
}

/** Synchronous twin for the getSync path: a FileSource (a SyncByteSource) for local files, an HttpSource otherwise. */
export function openByteSourceSync(location: string, options: OpenSourceOptions = {}): ByteSource {
  if (isRemote(location)) return new HttpSource(location, options);
  return FileSource.openSync(localPath(location), fileOptions(options));
}

/** Default cap for readAll: a manifest is kilobytes; a 64 MiB answer means the location is wrong. */
export const DEFAULT_READ_ALL_MAX_BYTES = 64 * 1024 * 1024;

export interface ReadAllOptions {
  /** Fail with SHARDKIT_ERR_TOO_LARGE beyond this many bytes. Default 64 MiB. */
  maxBytes?: number;
  stats?: IoStats;
  /** For URLs: the client to use (retries, sockets); without it a one-off client with default options. */
  client?: HttpClient;
}

/**
 * Reads a whole small file (manifest.json) from a local path or URL. Missing: SHARDKIT_ERR_SHARD_MISSING, which
 * callers reading a manifest turn into NOT_A_DATASET; other failures: IO or HTTP. URLs are fetched with a plain GET
 * (no Range) and retried like shard reads.
 */
export async function readAll(location: string, options: ReadAllOptions = {}): Promise<Uint8Array> {
  const maxBytes = expectIntegerInRange('maxBytes', options.maxBytes ?? DEFAULT_READ_ALL_MAX_BYTES, 0, 2 ** 31 - 1);
  if (isRemote(location)) return readAllRemote(location, maxBytes, options);
  const path = localPath(location);
  const source = await FileSource.open(path, options.stats === undefined ? {} : { stats: options.stats });
  try {
    const size = source.sizeSync();
    if (size > maxBytes) {
      throw new ShardkitError(
        ErrorCodes.TOO_LARGE,
        `${path} is ${size} bytes, over the ${maxBytes}-byte limit for this file`,
        { file: path },
      );
    }
    return await source.read(0, size);
  } finally {
    source.closeSync();
  }
}

async function readAllRemote(url: string, maxBytes: number, options: ReadAllOptions): Promise<Uint8Array> {
  const client = options.client ?? new HttpClient(options.stats === undefined ? {} : { stats: options.stats });
  const name = redactLocation(url);
  try {
    const { body } = await client.exchange(url, 'GET', {}, (res) => {
      if (res.statusCode === 200) {
        const encoding = contentCoding(res);
        if (encoding !== undefined) {
          const message = `${name} answered with Content-Encoding ${encoding}; serve it without compression`;
          return { fail: new ShardkitError(ErrorCodes.HTTP, message, { file: name }) };
        }
        return { read: 'upTo', maxBytes };
      }
      return planStatus(res, name);
    });
    if (options.stats !== undefined) {
      options.stats.reads++;
      options.stats.bytesRead += body.length;
    }
    return body;
  } finally {
    if (options.client === undefined) client.close();
  }
}

function localPath(location: string): string {
  return location.startsWith('file:') ? fileURLToPath(location) : location;
}

function fileOptions(options: OpenSourceOptions): FileSourceOptions {
  const result: FileSourceOptions = {};
  if (options.stats !== undefined) result.stats = options.stats;
  if (options.syncReadMaxBytes !== undefined) result.syncReadMaxBytes = options.syncReadMaxBytes;
  return result;
}
