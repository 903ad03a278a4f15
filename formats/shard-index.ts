/**
 * `shardindex.json`: the tar-layout dataset's shard list in the wids shard-index format (webdataset's `wids`), so
 * `wids.ShardListDataset("DIR/shardindex.json")` and WebDataset read a shardkit dataset with no conversion.
 * Deterministic: the same shards give the same bytes. Layout in formats/SPEC.md ("WebDataset shard index").
 */
import type { Layout } from './index-layout.js';

export const SHARD_INDEX_FILE = 'shardindex.json';
export const WIDS_KIND = 'wids-shard-index-v1';
export const WIDS_VERSION = 1;

export interface WidsShardIndex {
  __kind__: typeof WIDS_KIND;
  wids_version: typeof WIDS_VERSION;
  /** `shardkit-` and the index's header CRC32C (manifest.index.crc32c): names this dataset, not its directory. */
  name: string;
  /** Each shard in shard order: its file name relative to the dataset directory, and its sample count. */
  shardlist: { url: string; nsamples: number }[];
}

/** The layouts that get a shard index: wids and WebDataset read tar shards only. */
export function hasShardIndex(layout: Layout): boolean {
  return layout === 'tar';
}

/** The bytes of `shardindex.json`: two-space indented JSON, keys in the order above, a trailing newline. */
export function encodeShardIndex(indexCrc32c: string, shards: readonly { file: string; samples: number }[]): Uint8Array {
  const doc: WidsShardIndex = {
    __kind__: WIDS_KIND,
    wids_version: WIDS_VERSION,
    name: `shardkit-${indexCrc32c}`,
    shardlist: shards.map((s) => ({ url: s.file, nsamples: s.samples })),
  };
  return new TextEncoder().encode(`${JSON.stringify(doc, null, 2)}\n`);
}

/**
 * The extra files (a manifest's `files`) that a dataset made from another one takes over (derive, append, an
 * exemplar buffer, merge): all but shardindex.json, which every commit makes anew from its own shards.
 */
export function carriedFiles(files: readonly string[]): string[] {
  return files.filter((name) => name !== SHARD_INDEX_FILE);
}
