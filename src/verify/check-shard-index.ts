/**
 * shardindex.json (the wids shard index of a tar-layout dataset) must say what the manifest says: every shard, in
 * order, with its sample count. A stale one would make wids and WebDataset readers skip or repeat samples.
 */
import { isShardkitError } from '../../formats/errors.js';
import type { Manifest } from '../../formats/manifest.js';
import { encodeShardIndex, hasShardIndex, SHARD_INDEX_FILE } from '../../formats/shard-index.js';
import { resolveLocation } from '../io/location.js';
import { readAll, type ReadAllOptions } from '../io/open-source.js';

/** Reports through `problem` a shardindex.json the manifest lists whose bytes differ from the manifest's shards. */
export async function checkShardIndex(location: string, manifest: Manifest, options: ReadAllOptions, problem: (file: string, what: string) => void): Promise<void> {
  if (!hasShardIndex(manifest.layout) || !manifest.files.includes(SHARD_INDEX_FILE)) return;
  let bytes: Uint8Array;
  try {
    bytes = await readAll(resolveLocation(location, SHARD_INDEX_FILE), options);
  } catch (err) {
    if (isShardkitError(err)) return; // missing or unreadable: checkExtraFiles reports it
    throw err;
  }
  const expected = encodeShardIndex(manifest.index.crc32c, manifest.shards);
  if (!Buffer.from(bytes).equals(Buffer.from(expected))) {
    problem(SHARD_INDEX_FILE, 'does not list the manifest\'s shards and sample counts; wids and WebDataset would read the wrong samples (run `shardkit reindex` to write it again)');
  }
}
