/**
 * A sample with a source file too large to hold in one buffer, written into its shard as it is read (issue 26,
 * item 3): per member in stored order, its tar header (a pax `size` record from 8 GiB on), its bytes piece by piece
 * with their CRC32C, and tar padding. The bytes are those the in-memory path writes for the same files. Such members
 * are stored uncompressed, whatever the writer's codec: a reader decompresses an LZ4 member whole, and could not.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { Codec, type MemberEntry } from '../../formats/index-entry.js';
import type { Layout } from '../../formats/index-layout.js';
import { compareKeys } from '../../formats/key-order.js';
import { memberPath } from '../../formats/sample.js';
import { LZ4_NAME_SUFFIX } from '../../formats/sample-layout.js';
import { encodeFileHeader, tarPadding } from '../../formats/tar-header.js';
import { crashPoint } from './crash-point.js';
import type { ShardFile } from './shard-file.js';
import { checkSecondRead, closeSource, openSource, streamSource, type OpenSource } from './stream-source.js';

/** One member's source file, opened. */
export interface StreamedMember {
  ext: string;
  source: OpenSource;
}

/** The sample's files opened and stat'ed, in stored order (extensions byte-wise), ready to be written. */
export interface StreamedSample {
  key: string;
  members: StreamedMember[];
  /** Tar headers (empty in the packed layout), one per member. */
  headers: Uint8Array[];
  /** Bytes the sample takes in the shard. */
  bytes: number;
  /** Bytes of its source files. */
  sourceBytes: number;
}

/**
 * Opens and stats the files of sample `key` (`paths[i]` is the file of `exts[i]`). In a tar with LZ4, a member
 * whose name ends in `.lz4` is TOO_LARGE: such names are frames the writer made (see encodeSampleTo), and this one
 * would be stored as it is. Closes what it opened when it throws.
 */
export function openStreamedSample(key: string, exts: readonly string[], paths: readonly string[], layout: Layout, codec: number): StreamedSample {
  const order = exts.map((_, i) => i).sort((a, b) => compareKeys(exts[a] as string, exts[b] as string));
  const members: StreamedMember[] = [];
  try {
    for (const i of order) {
      const ext = exts[i] as string;
      members.push({ ext, source: openSource(paths[i] as string, memberPath(key, ext)) });
    }
    const headers: Uint8Array[] = [];
    let bytes = 0;
    let sourceBytes = 0;
    for (const m of members) {
      const size = m.source.size;
      sourceBytes += size;
      if (layout === 'tar') {
        const name = memberPath(key, m.ext);
        if (codec === Codec.lz4 && name.endsWith(LZ4_NAME_SUFFIX)) {
          throw new ShardkitError(
            ErrorCodes.TOO_LARGE,
            `${m.source.file.absPath} has ${size} bytes, too many to compress in one piece, and a tar member named *${LZ4_NAME_SUFFIX} must be an LZ4 frame in a dataset packed with --compress lz4; leave it out with --on-error skip or --exclude, or pack with --compress none`,
            { file: m.source.file.absPath },
          );
        }
        const header = encodeFileHeader(name, size);
        headers.push(header);
        bytes += header.length + size + tarPadding(size);
      } else bytes += size;
    }
    return { key, members, headers, bytes, sourceBytes };
  } catch (err) {
    closeStreamedSample(members);
    throw err;
  }
}

export function closeStreamedSample(members: readonly StreamedMember[]): void {
  for (const m of members) closeSource(m.source);
}

/**
 * Writes the sample into `shard` (which must have no caller bytes pending), reading each file in pieces of
 * `piece`'s length. Returns the index's view of it. INPUT_CHANGED when a file changed while it was read (or, with
 * `verifySource`, between two reads); the caller then takes the shard back to where it was.
 */
export function writeStreamedSample(sample: StreamedSample, shard: ShardFile, piece: Uint8Array, verifySource: boolean): { spanStart: number; members: MemberEntry[] } {
  const members: MemberEntry[] = [];
  let pos = 0;
  let spanStart = -1;
  sample.members.forEach((m, i) => {
    const header = sample.headers[i];
    if (header !== undefined) {
      shard.write(header);
      pos += header.length;
    }
    if (spanStart < 0) spanStart = pos;
    const crc = streamSource(m.source, piece, (bytes) => {
      shard.write(bytes);
      // the piece is read into again: written or copied before that
      shard.settle();
      crashPoint('pack:streamed-piece');
    });
    if (verifySource) checkSecondRead(m.source, piece, crc);
    const size = m.source.size;
    members.push({ ext: m.ext, offset: pos - spanStart, size, storedSize: size, codec: Codec.none, crc32c: crc });
    pos += size;
    if (header !== undefined) {
      const pad = tarPadding(size);
      shard.zeros(pad);
      pos += pad;
    }
  });
  return { spanStart, members };
}
