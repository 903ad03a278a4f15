/** Argument parsers shared by commands: each validates and fails with INVALID_ARG (exit 2). */
import { ErrorCodes, ShardkitError } from '../formats/errors.js';
import type { CacheEvent, CacheOptions } from '../src/cache/shard-cache.js';
import { httpHeaders } from '../src/io/http-headers.js';
import { parseSize } from '../src/pack/size-arg.js';

export function parseCount(text: string, what: string, min = 0): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected an integer of at least ${min} for ${what} but received ${JSON.stringify(text)}`);
  }
  return n;
}

export function parseChoice<T extends string>(text: string, what: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(text)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of ${choices.join(', ')} for ${what} but received ${JSON.stringify(text)}`);
  }
  return text as T;
}

/** `--header`, for commands that read a dataset: collected as given, parsed by httpHeaders (src/io/http-headers.ts). */
export const HEADER_FLAGS = '-H, --header <header>';
export const HEADER_HELP = 'HTTP request header for a remote dataset, "Name: value", or @FILE with one per line (keeps tokens out of ps); repeatable';

/** `--timeout`, for commands that read a dataset: the bound on every remote request, its retries included. */
export const TIMEOUT_FLAGS = '--timeout <duration>';
export const TIMEOUT_HELP =
  'remote dataset: fail any request not answered in full within DURATION, retries included (e.g. 30s, 500ms, 2m; a plain number is seconds; default 120s); a server that stalls or trickles fails then';

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, '': 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** A duration such as `30s`, `500ms`, `2m`, `1h` or `45` (seconds), in milliseconds. */
export function parseDuration(text: string, what: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|)\s*$/i.exec(text);
  const ms = m === null ? NaN : Math.round(Number(m[1]) * (DURATION_UNITS_MS[(m[2] ?? '').toLowerCase()] as number));
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > 86_400_000) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a duration between 1ms and 24h (such as 30s, 500ms, 2m) for ${what} but received ${JSON.stringify(text)}`);
  }
  return ms;
}

/**
 * openDataset's, verifyDataset's and derive's `http` option from `--header` values and `--timeout` (neither given:
 * no option).
 */
export function httpOption(values: readonly string[] | undefined, timeout?: string): { http?: { headers?: Record<string, string>; deadlineMs?: number } } {
  const headers = values === undefined || values.length === 0 ? undefined : httpHeaders(values);
  const deadlineMs = timeout === undefined ? undefined : parseDuration(timeout, '--timeout');
  if (headers === undefined && deadlineMs === undefined) return {};
  return { http: { ...(headers === undefined ? {} : { headers }), ...(deadlineMs === undefined ? {} : { deadlineMs }) } };
}

/** `--max-member-bytes`, for commands that read members whole: openDataset's guard, raised for big files. */
export const MAX_MEMBER_FLAGS = '--max-member-bytes <size>';
export const MAX_MEMBER_HELP = 'read members up to SIZE (default 1GiB; e.g. 4GiB for big files): the guard against a damaged or hostile index';

/** openDataset's `maxMemberBytes` from `--max-member-bytes` (not given: the default). */
export function maxMemberOption(text: string | undefined): { maxMemberBytes?: number } {
  return text === undefined ? {} : { maxMemberBytes: parseSize(text, '--max-member-bytes', { min: 1 }) };
}

/** Commander's collector for a repeatable option. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `--cache-dir DIR --cache-size SIZE`, for commands that read a dataset: openDataset's node-local shard cache. */
export const CACHE_DIR_FLAGS = '--cache-dir <dir>';
export const CACHE_DIR_HELP = 'node-local cache of whole shards for a dataset on slow storage (http(s), a network file system); shared by the processes that use it';
export const CACHE_SIZE_FLAGS = '--cache-size <size>';
export const CACHE_SIZE_HELP = 'most bytes --cache-dir may hold, downloads included (e.g. 50GiB); required with --cache-dir';

/** openDataset's `cache` option from `--cache-dir`/`--cache-size` (neither given: none). Cache notes go to stderr. */
export function cacheOption(dir: string | undefined, size: string | undefined): { cache?: CacheOptions } {
  if (dir === undefined && size === undefined) return {};
  if (dir === undefined || size === undefined) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `--cache-dir and --cache-size go together: give both (e.g. --cache-dir /dev/shm/shardkit --cache-size 8GiB) or neither`);
  }
  const onEvent = (e: CacheEvent): void => void process.stderr.write(`shardkit: note: cache: ${e.shard}: ${e.reason}\n`);
  return { cache: { dir, maxBytes: parseSize(size, '--cache-size', { min: 1 }), onEvent } };
}
