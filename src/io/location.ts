import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/**
 * A location is where a dataset or one of its files lives: a local path, a `file://` URL, or an `http(s)://` URL
 * (possibly presigned, with the signature in the query string).
 */

const REMOTE_SCHEME = /^https?:\/\//i;

/** True for http:// and https:// locations (read with Range requests), false for local paths and file:// URLs. */
export function isRemote(location: string): boolean {
  return REMOTE_SCHEME.test(location);
}

/**
 * The location of `file` (a relative name from the manifest, like `shard-00003.tar`) inside the dataset at `base`.
 *
 * - Local directory or `file://` URL: the joined path.
 * - http(s) URL: `file` is appended to the URL's path as a directory entry, and the base's query string is kept,
 *   so a dataset URL carrying a token (`https://h/ds?sig=...`) gives `https://h/ds/shard-00003.tar?sig=...`.
 *   The fragment is dropped; each path segment of `file` is percent-encoded.
 *
 * `file` must stay inside the dataset: absolute names, `..`, `.`, empty segments and backslashes are refused
 * with SHARDKIT_ERR_UNSAFE_PATH (a manifest is input, and may be hostile).
 *
 * @example
 * resolveLocation('/data/ds', 'index.skx');                        // '/data/ds/index.skx'
 * resolveLocation('https://cdn.example/ds?token=abc', 'a.tar');   // 'https://cdn.example/ds/a.tar?token=abc'
 */
export function resolveLocation(base: string, file: string): string {
  const segments = safeSegments(file);
  if (isRemote(base)) {
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        // no cause: Node's URL error quotes the whole input, credentials and all
        `Expected a valid URL for the dataset but received ${redactLocation(base)}`,
      );
    }
    const dir = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
    url.pathname = dir + segments.map(encodeURIComponent).join('/');
    url.hash = '';
    return url.toString();
  }
  let dir = base;
  if (base.startsWith('file:')) {
    try {
      dir = fileURLToPath(base);
    } catch (err) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a file:// URL of a local directory but received ${base}`, { cause: err });
    }
  }
  return path.join(dir, ...segments);
}

/**
 * `value`, a path that must be local (what a command writes, or reads as files: a pack's source, an output
 * directory). An http(s) URL there is a usage error naming it without credentials: taken as a relative path, it
 * made a directory named after the URL, or an error that quoted its user, password and query.
 */
export function expectLocalPath(what: string, value: string, hint?: string): string {
  if (isRemote(value)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${what} must be a local path, not the URL ${redactLocation(value)}${hint === undefined ? '' : `: ${hint}`}`);
  return value;
}

/**
 * The location without query string, fragment or user:password, for error messages: presigned URLs carry
 * credentials in the query, and messages end up in logs.
 */
export function redactLocation(location: string): string {
  if (!isRemote(location)) return location;
  try {
    const url = new URL(location);
    const hadQuery = url.search !== '';
    url.search = '';
    url.hash = '';
    url.username = '';
    url.password = '';
    return hadQuery ? `${url.toString()}?...` : url.toString();
  } catch {
    // not a URL the WHATWG parser takes (a bad port, a space in the host): still no user, password or query. A
    // password may hold '/', '?' or '#' (base64 tokens do), so everything up to the last '@' goes
    return location.replace(/^(https?:\/\/).*@/is, '$1').replace(/[?#].*$/s, '?...');
  }
}

function safeSegments(file: string): string[] {
  const segments = file.split('/');
  const unsafe =
    file.length === 0 ||
    file.includes('\\') ||
    file.includes('\0') ||
    path.isAbsolute(file) ||
    /^[a-z][a-z0-9+.-]*:/i.test(file) ||
    segments.some((s) => s === '' || s === '.' || s === '..');
  if (unsafe) {
    throw new ShardkitError(
      ErrorCodes.UNSAFE_PATH,
      `Refusing file name ${JSON.stringify(file)}: dataset files must be relative names inside the dataset ` +
        '(no leading /, no . or .. segments, no backslashes, no scheme)',
      { file },
    );
  }
  return segments;
}
