/**
 * `import { openDataset } from 'shardkit/read'`: the reading API alone, for training processes that only read.
 * The same objects as the package's main entry (one bundle, shared chunks: `ShardkitError`, `Dataset` and the rest
 * are the same classes whichever entry a module imported them from), without the writing API, the passes, the
 * walks, mixtures and benchmark profiles that `import 'shardkit'` also loads: about half the code, and about two
 * thirds of its import time in a fresh process (16-19 ms of CPU against 24-28; bench/fresh.mjs --entry).
 */
export { VERSION } from './version.js';

// errors: match on `code`
export { ShardkitError, ErrorCodes, isShardkitError, type ErrorCode } from '../formats/errors.js';
export type { Sample } from '../formats/sample.js';
export { splitKey, memberPath } from '../formats/sample.js';
export type { IndexEntry, MemberEntry } from '../formats/index-entry.js';
export type { Manifest } from '../formats/manifest.js';

// reading
export { openDataset, Dataset, type OpenDatasetOptions, type KeyRange, type DatasetStats } from './read/dataset.js';
export type { HttpClientOptions } from './io/http-client.js';
export { IoStats } from './io/io-stats.js';
export { nativeAvailable } from './native/native.js';

// loader and its ordering
export { Loader, type LoaderStats } from './read/loader.js';
export type { LoaderOptions } from './read/loader-options.js';
export { mergeLoaderStates, type LoaderState, type DatasetIdentity } from './read/loader-state.js';
export type { DecodedImage, DecodedSample, DecodeOption, MemberDecoding } from './read/decode-image.js';
export type { CacheEvent, CacheOptions, CacheStats } from './cache/shard-cache.js';
export { planEpoch, mergeRankStates, rankCounts } from './read/epoch-plan.js';
export { shuffles, SHUFFLE_NAMES, type ShuffleName } from './read/shuffle/index.js';
