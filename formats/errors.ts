/**
 * One error class with a stable `code`, after undici: users match on `code`, never on the message.
 * Every code is listed in the README with what it means and what to do.
 */
export const ErrorCodes = {
  /** A caller passed a bad argument or option (CLI exit 2). */
  INVALID_ARG: 'SHARDKIT_ERR_INVALID_ARG',
  /** The directory has no manifest.json: not a dataset, or a pack that never finished. */
  NOT_A_DATASET: 'SHARDKIT_ERR_NOT_A_DATASET',
  /** A manifest or index written by a newer format version. */
  UNSUPPORTED_VERSION: 'SHARDKIT_ERR_UNSUPPORTED_VERSION',
  /** The index file does not start with the shardkit index magic. */
  BAD_MAGIC: 'SHARDKIT_ERR_BAD_MAGIC',
  /** An index page or header failed its checksum or structural checks. */
  CORRUPT_INDEX: 'SHARDKIT_ERR_CORRUPT_INDEX',
  /** A file is shorter than its header, table or manifest says. */
  TRUNCATED: 'SHARDKIT_ERR_TRUNCATED',
  /** manifest.json is not valid JSON or does not follow the schema. */
  BAD_MANIFEST: 'SHARDKIT_ERR_BAD_MANIFEST',
  /** The index belongs to another dataset than the manifest (or was rebuilt without the manifest). */
  INDEX_MISMATCH: 'SHARDKIT_ERR_INDEX_MISMATCH',
  /** A shard file named by the manifest is missing. */
  SHARD_MISSING: 'SHARDKIT_ERR_SHARD_MISSING',
  /** A shard's size or fingerprint differs from what the index recorded. */
  SHARD_MISMATCH: 'SHARDKIT_ERR_SHARD_MISMATCH',
  /** Shard bytes are not what the layout says (bad tar header, bad LZ4 frame). */
  CORRUPT_SHARD: 'SHARDKIT_ERR_CORRUPT_SHARD',
  /** A member's CRC32C does not match its bytes. */
  CHECKSUM: 'SHARDKIT_ERR_CHECKSUM',
  /** No sample with that key. */
  KEY_NOT_FOUND: 'SHARDKIT_ERR_KEY_NOT_FOUND',
  /** A position outside [0, size). */
  OUT_OF_RANGE: 'SHARDKIT_ERR_OUT_OF_RANGE',
  /** Two samples with one key, or keys given out of order where order is required. */
  DUPLICATE_KEY: 'SHARDKIT_ERR_DUPLICATE_KEY',
  /** A key, member or entry exceeds a format or safety limit. */
  TOO_LARGE: 'SHARDKIT_ERR_TOO_LARGE',
  /** A path would land outside the target directory, or a link/device where a file is expected. */
  UNSAFE_PATH: 'SHARDKIT_ERR_UNSAFE_PATH',
  /** The output already holds a dataset (use --resume or --force). */
  OUTPUT_EXISTS: 'SHARDKIT_ERR_OUTPUT_EXISTS',
  /** An input file could not be read or decoded while packing. */
  INPUT: 'SHARDKIT_ERR_INPUT',
  /** An input file changed or vanished while it was being packed. */
  INPUT_CHANGED: 'SHARDKIT_ERR_INPUT_CHANGED',
  /** A filesystem operation failed (permission, no space, ...); `cause` holds the system error. */
  IO: 'SHARDKIT_ERR_IO',
  /** An HTTP source failed: status, missing Range support, retries exhausted. */
  HTTP: 'SHARDKIT_ERR_HTTP',
  /** A loader state given to resumeFrom does not match the dataset or options. */
  BAD_STATE: 'SHARDKIT_ERR_BAD_STATE',
  /** The dataset or loader was closed. */
  CLOSED: 'SHARDKIT_ERR_CLOSED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** Codes a user causes by how they called us, not by what their data holds: the CLI exits 2 for these. */
export const USAGE_ERROR_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCodes.INVALID_ARG,
  ErrorCodes.OUTPUT_EXISTS,
  ErrorCodes.BAD_STATE,
]);

export interface ShardkitErrorDetails {
  /** The file the error is about (dataset, shard, index, input). */
  file?: string;
  key?: string;
  shard?: string;
  offset?: number;
  cause?: unknown;
  /**
   * Words that may differ between two runs over the same input, appended to the message (`message: variable`) but
   * left out of {@link ShardkitError.stableMessage}: a decoder's own text, which libvips keeps in one buffer for
   * all threads, so concurrent failures swap or cut each other's.
   */
  variable?: string;
}

/**
 * What makes a ShardkitError one, for `instanceof` too: a value on the prototype under a registered symbol, which
 * every copy of this module shares. The command line runs a bundle (cli/bundle.mjs) while a `--pass-module` imports
 * the package, each with its own class; an error from either is a ShardkitError to both.
 */
const BRAND = Symbol.for('shardkit.ShardkitError');

export class ShardkitError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // a subclass keeps the ordinary prototype-chain test
    if (this !== ShardkitError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }

  readonly code: ErrorCode;
  readonly file: string | undefined;
  readonly key: string | undefined;
  readonly shard: string | undefined;
  readonly offset: number | undefined;
  /** The message without its run-dependent words (see ShardkitErrorDetails.variable): what a manifest records. */
  readonly stableMessage: string;

  constructor(code: ErrorCode, message: string, details: ShardkitErrorDetails = {}) {
    super(details.variable === undefined ? message : `${message}: ${details.variable}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.stableMessage = message;
    this.name = 'ShardkitError';
    this.code = code;
    this.file = details.file;
    this.key = details.key;
    this.shard = details.shard;
    this.offset = details.offset;
  }
}

Object.defineProperty(ShardkitError.prototype, BRAND, { value: true });

export function isShardkitError(err: unknown, code?: ErrorCode): err is ShardkitError {
  return err instanceof ShardkitError && (code === undefined || err.code === code);
}
