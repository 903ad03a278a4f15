/**
 * Opening and reading a shard for a verify, where a missing or unreadable shard is a finding, not a failure: the
 * problem goes into the shard's result and the caller moves on to the other shards. An http deadline still throws.
 */
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import type { ByteSource } from '../io/byte-source.js';
import { isHttpDeadline } from '../io/http-client.js';
import { resolveLocation } from '../io/location.js';
import { openByteSource } from '../io/open-source.js';
import type { ReadAhead } from './read-ahead.js';
import type { ShardCheckInput, ShardResult } from './shard-check.js';

/** Opens the shard and reads its size; undefined when it cannot (the problem is in `result`). */
export async function openShard(input: ShardCheckInput, result: ShardResult): Promise<{ source: ByteSource; size: number } | undefined> {
  const { record } = input;
  const unreadable = (err: unknown): undefined => {
    if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
    result.changed = true;
    result.problems.push(err.code === ErrorCodes.SHARD_MISSING ? `missing: its ${record.samples} samples cannot be read` : err.message);
    return undefined;
  };
  let source: ByteSource;
  try {
    source = await openByteSource(resolveLocation(input.location, record.file), input.opener);
  } catch (err) {
    return unreadable(err);
  }
  let size: number;
  try {
    // over http the first request goes out here: a missing shard is found now, not at open
    size = await source.size();
  } catch (err) {
    await source.close();
    return unreadable(err);
  }
  if (size !== record.bytes) result.problems.push(`is ${size} bytes, the index says ${record.bytes}${size < record.bytes ? ' (truncated)' : ''}`);
  if (input.manifestShard !== undefined && size !== input.manifestShard.bytes) result.changed = true;
  return { source, size };
}

/**
 * Reads `length` bytes at `offset` of an opened shard, or reports why it cannot and returns undefined: one bad
 * disk sector or unreadable file must not keep the other shards from being checked.
 */
export async function readShard(reader: ReadAhead, offset: number, length: number, nextLength: number, result: ShardResult): Promise<Uint8Array | undefined> {
  try {
    return await reader.read(offset, length, nextLength);
  } catch (err) {
    if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
    result.problems.push(err.message);
    return undefined;
  }
}
