/**
 * The LMDB side of `--vs lmdb`: the classic alternative the literature compares shards against. Samples are
 * stored one record per sample key, the value holding every member in a simple length-prefixed encoding:
 *
 *   u32 member count, then per member: u16 ext byte length, ext (UTF-8), u32 byte length, bytes   (little-endian)
 *
 * lmdb-js is an optional dependency (a devDependency of shardkit): it is imported only when asked for.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { setMember, type Sample } from '../../formats/sample.js';
import type { Dataset } from '../read/dataset.js';

const COUNT_BYTES = 4;
const EXT_LENGTH_BYTES = 2;
const MEMBER_LENGTH_BYTES = 4;
/** Samples written per LMDB transaction while building. */
const BUILD_TXN_SAMPLES = 512;

/** The part of lmdb-js's API the bench uses. */
export interface LmdbStore {
  getBinary(key: string): Buffer | undefined;
  putSync(key: string, value: Buffer): void;
  transactionSync<T>(action: () => T): T;
  close(): Promise<void>;
}

type LmdbOpen = (options: Record<string, unknown>) => LmdbStore;

/** Imports lmdb-js, or throws INVALID_ARG saying how to install it. */
export async function importLmdb(): Promise<LmdbOpen> {
  try {
    const mod = (await import('lmdb')) as unknown as { open: LmdbOpen };
    return mod.open;
  } catch (err) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `--vs lmdb needs the optional package lmdb (lmdb-js), which is not installed: run \`npm install lmdb\` or leave out --vs`, { cause: err });
  }
}

export function encodeMembers(members: Record<string, Uint8Array>): Buffer {
  const entries = Object.entries(members).map(([ext, bytes]) => [Buffer.from(ext, 'utf8'), bytes] as const);
  const total = entries.reduce((n, [ext, bytes]) => n + EXT_LENGTH_BYTES + ext.length + MEMBER_LENGTH_BYTES + bytes.length, COUNT_BYTES);
  const out = Buffer.allocUnsafe(total);
  let at = out.writeUInt32LE(entries.length, 0);
  for (const [ext, bytes] of entries) {
    at = out.writeUInt16LE(ext.length, at);
    at += ext.copy(out, at);
    at = out.writeUInt32LE(bytes.length, at);
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
}

/** Decodes a value written by {@link encodeMembers}; members are views of `value`. */
export function decodeMembers(key: string, value: Buffer): Sample {
  const members: Record<string, Uint8Array> = {};
  const bad = (): never => {
    throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `LMDB record of sample "${key}" is damaged (bench encoding)`, { key });
  };
  if (value.length < COUNT_BYTES) bad();
  const count = value.readUInt32LE(0);
  let at = COUNT_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + EXT_LENGTH_BYTES > value.length) bad();
    const extLength = value.readUInt16LE(at);
    at += EXT_LENGTH_BYTES;
    if (at + extLength + MEMBER_LENGTH_BYTES > value.length) bad();
    const ext = value.toString('utf8', at, at + extLength);
    at += extLength;
    const length = value.readUInt32LE(at);
    at += MEMBER_LENGTH_BYTES;
    if (at + length > value.length) bad();
    setMember(members, ext, value.subarray(at, at + length));
    at += length;
  }
  return { key, members };
}

/** Options the build and the readers open the environment with (same map size, no compression). */
export function lmdbOpenOptions(path: string, readOnly: boolean): Record<string, unknown> {
  return { path, encoding: 'binary', compression: false, readOnly, ...(readOnly ? {} : { noSync: true }) };
}

/** Copies every sample of `ds` into a new LMDB environment at `path`; returns the seconds it took. */
export async function buildLmdb(ds: Dataset, path: string, onSample?: (done: number) => void): Promise<number> {
  const open = await importLmdb();
  const started = performance.now();
  const db = open(lmdbOpenOptions(path, false));
  try {
    let batch: Sample[] = [];
    let done = 0;
    const flush = (): void => {
      db.transactionSync(() => {
        for (const s of batch) db.putSync(s.key, encodeMembers(s.members));
      });
      done += batch.length;
      batch = [];
      onSample?.(done);
    };
    for await (const entry of ds.entries()) {
      batch.push(ds.readSync(entry));
      if (batch.length >= BUILD_TXN_SAMPLES) flush();
    }
    if (batch.length > 0) flush();
  } finally {
    await db.close();
  }
  return (performance.now() - started) / 1000;
}
