/** Summaries of a dataset for `shardkit info` and `shardkit ls`, as plain JSON-able objects. */
import fs from 'node:fs';
import { CODEC_NAMES, type IndexEntry } from '../../formats/index-entry.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { fsCall } from '../pack/fs-errors.js';
import { replaceFile, replaceFileStreamed, writeAll } from '../pack/replace-file.js';
import { shouldStream, streamMember } from './member-stream-read.js';
import { expectLocalPath, redactLocation } from '../io/location.js';
import type { Dataset } from './dataset.js';

export interface DatasetInfo {
  location: string;
  layout: string;
  compress: string;
  samples: number;
  members: number;
  shards: number;
  bytes: { members: number; stored: number; shards: number; index: number };
  /** (shards + index) / original member bytes - 1. */
  /** (shard + index bytes) / member bytes - 1; null when there are no member bytes to compare with. */
  overhead: number | null;
  index: { pageSize: number; pages: number; height: number; bytesPerSample: number };
  passes: { name: string; params: Record<string, unknown> }[];
  skipped: number;
  /** Samples each `append` brought, oldest first (none for a dataset never appended to). */
  appends: number[];
  tool: string;
}

export function datasetInfo(ds: Dataset): DatasetInfo {
  const m = ds.manifest;
  const h = ds.index.header;
  return {
    location: redactLocation(ds.location), // a presigned URL's signature or a user:password stays out of the output
    layout: m.layout,
    compress: m.compress,
    samples: m.totals.samples,
    members: m.totals.members,
    shards: m.shards.length,
    bytes: { members: m.totals.bytes, stored: m.totals.storedBytes, shards: m.totals.shardBytes, index: m.index.bytes },
    overhead: m.totals.bytes === 0 ? null : (m.totals.shardBytes + m.index.bytes) / m.totals.bytes - 1,
    index: { pageSize: h.pageSize, pages: h.pageCount, height: h.height, bytesPerSample: h.entryCount === 0 ? 0 : m.index.bytes / h.entryCount },
    passes: m.passes,
    skipped: m.skipped.length,
    appends: (m.appends ?? []).map((a) => a.samples),
    tool: `shardkit ${m.tool.version}`,
  };
}

export interface EntryListing {
  key: string;
  position: number;
  shard: string;
  offset: number;
  length: number;
  members: { ext: string; size: number; storedSize: number; codec: string; crc32c: string }[];
}

export function describeEntry(ds: Dataset, e: IndexEntry & { position: number }): EntryListing {
  return {
    key: e.key,
    position: e.position,
    shard: ds.shardName(e.shard),
    offset: e.offset,
    length: e.length,
    members: e.members.map((m) => ({ ext: m.ext, size: m.size, storedSize: m.storedSize, codec: CODEC_NAMES[m.codec], crc32c: (m.crc32c >>> 0).toString(16).padStart(8, '0') })),
  };
}

/** The bytes of one member of the sample `key`; with no `ext`, the sample must have exactly one member. */
export async function memberBytes(ds: Dataset, key: string, ext: string | undefined): Promise<{ ext: string; bytes: Uint8Array }> {
  const sample = await ds.get(key);
  const exts = Object.keys(sample.members);
  const chosen = ext ?? (exts.length === 1 ? exts[0] : undefined);
  if (chosen === undefined) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample ${JSON.stringify(key)} has members ${exts.join(', ')}; choose one with --ext`, { key });
  }
  const bytes = sample.members[chosen];
  if (bytes === undefined) {
    throw new ShardkitError(ErrorCodes.KEY_NOT_FOUND, `sample ${JSON.stringify(key)} has no member "${chosen}" (it has ${exts.join(', ')})`, { key });
  }
  return { ext: chosen, bytes };
}

/**
 * `shardkit get`'s output of one member (chosen as {@link memberBytes} does) to a file or to `write`: whole when
 * its sample is small, else read and written piece by piece (see member-stream-read.ts), a 9 GiB member included.
 */
export async function writeMember(ds: Dataset, key: string, ext: string | undefined, out: { file: string } | { write: (piece: Uint8Array) => Promise<void> }): Promise<void> {
  const entry = await ds.locate(key);
  if (!shouldStream(entry)) {
    const { bytes } = await memberBytes(ds, key, ext);
    if ('file' in out) saveFile(out.file, bytes);
    else await out.write(bytes);
    return;
  }
  const exts = entry.members.map((m) => m.ext);
  const chosen = ext ?? (exts.length === 1 ? exts[0] : undefined);
  if (chosen === undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample ${JSON.stringify(key)} has members ${exts.join(', ')}; choose one with --ext`, { key });
  const member = entry.members.find((m) => m.ext === chosen);
  if (member === undefined) throw new ShardkitError(ErrorCodes.KEY_NOT_FOUND, `sample ${JSON.stringify(key)} has no member "${chosen}" (it has ${exts.join(', ')})`, { key });
  if (!('file' in out)) return streamMember(ds, entry, member, out.write);
  expectLocalPath('--out', out.file);
  const st = lstatOrUndefined(out.file);
  if (st !== undefined && !st.isFile()) {
    // a device or pipe (/dev/stdout) is written to as it is, as saveFile does
    const fd = fsCall('write', out.file, () => fs.openSync(out.file, 'w'));
    try {
      await streamMember(ds, entry, member, (piece) => fsCall('write', out.file, () => writeAll(fd, piece)));
    } finally {
      fs.closeSync(fd);
    }
    return;
  }
  await replaceFileStreamed(out.file, (write) => streamMember(ds, entry, member, write), st === undefined ? {} : { keepMode: st.mode & PERMISSION_BITS });
}

function lstatOrUndefined(file: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(file);
  } catch {
    return undefined;
  }
}

const PERMISSION_BITS = 0o7777;

/**
 * Writes bytes to a file (the `--out` of `shardkit get`), through a temporary renamed into place: a failed write
 * leaves no cut-short file, and a file already there keeps its content until the new one is complete (and keeps its
 * permission bits). A symbolic link, device or pipe named by `--out` (`/dev/stdout`) is written to as before:
 * renaming over it would replace the link or device node instead of writing where it leads.
 */
export function saveFile(file: string, bytes: Uint8Array): void {
  expectLocalPath('--out', file);
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(file);
  } catch {
    st = undefined;
  }
  if (st !== undefined && !st.isFile()) {
    fsCall('write', file, () => {
      const fd = fs.openSync(file, 'w');
      try {
        writeAll(fd, bytes);
      } finally {
        fs.closeSync(fd);
      }
    });
    return;
  }
  replaceFile(file, bytes, st === undefined ? {} : { keepMode: st.mode & PERMISSION_BITS });
}
