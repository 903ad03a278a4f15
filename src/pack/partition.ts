/**
 * `--part I/N`: which samples a part packs. A sample belongs to part (FNV-1a 32 of its key) mod N: every machine
 * decides alone, from the key only, and the parts are disjoint and cover the dataset whatever order they run in.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { utf8Bytes } from '../../formats/bytes.js';

export interface PartSpec {
  /** 0-based part number. */
  index: number;
  count: number;
}

/** Parses `I/N` with 0 <= I < N (parts are numbered from 0, like Slurm array and Kubernetes job indexes). */
export function parsePart(text: string): PartSpec {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || !Number.isSafeInteger(index) || !Number.isSafeInteger(count) || count < 1 || index >= count || count > 65_536) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected I/N with 0 <= I < N <= 65536 for --part but received ${JSON.stringify(text)}`);
  }
  return { index, count };
}

export function partOfKey(key: string, count: number): number {
  let h = 0x811c9dc5;
  for (const b of utf8Bytes(key)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

/** Shard file prefix for a part, so the shards of all parts can sit in one directory after a merge. */
export function partShardPrefix(part: PartSpec): string {
  const width = String(part.count - 1).length;
  return `part-${String(part.index).padStart(width, '0')}-of-${part.count}-shard-`;
}
