/**
 * shardkit's public API: `import { openDataset, pack, DatasetWriter } from 'shardkit'`.
 * Everything not exported here is internal and may change.
 *
 * Importing this module loads what reading needs (and the light, synchronous writing API: DatasetWriter, walks,
 * passes, sizes); the whole-dataset operations load on their first call (src/on-demand.ts), and sharp, lz4-napi,
 * vega and lmdb on first use. test/e2e/import-cost.test.ts checks it.
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

// writing
export { DatasetWriter, type DatasetWriterOptions, type WriterStats } from './pack/dataset-writer.js';
export { pack, append, derive, mergeParts } from './on-demand.js';
export { defaultOutDir } from './pack/output-dir.js';
export type { PackOptions, PackResult, PackProgress } from './pack/pack.js';
export type { AppendOptions, AppendResult } from './pack/append.js';
export type { DeriveOptions, DeriveResult } from './pack/derive.js';
export type { MergeResult } from './pack/merge.js';
export { parsePart, partOfKey, type PartSpec } from './pack/partition.js';
export { walkSamples, walkSource, type WalkOptions, type WalkStats, type SourceSample } from './pack/walk.js';
export { parseSize, formatSize } from './pack/size-arg.js';
export * from './passes/index.js';

// mixtures of datasets
export { openMixture, Mixture, type MixtureSource, type MixtureOptions } from './read/mixture.js';
export { MixtureLoader, type MixtureLoaderOptions, type MixtureSample, type DecodedMixtureSample, type MixtureLoaderStats } from './read/mixture-loader.js';
export { mergeMixtureStates, type MixtureState } from './read/mixture-state.js';
export { mixtureCounts } from './read/mixture-counts.js';

// continual learning: exemplar selection and buffers, rehearsal
export { openRehearsal, Rehearsal, type RehearsalOptions } from './read/rehearsal.js';
export { updateExemplarBuffer } from './on-demand.js';
export type { ExemplarBufferOptions, ExemplarBufferResult, ExemplarPolicy, ExemplarRecord } from './pack/exemplar-buffer.js';
export { parseSelection, type Selection } from './pack/select.js';
export { taskShards } from './read/dataset-subset.js';

// loader ordering
export { planEpoch, mergeRankStates, rankCounts } from './read/epoch-plan.js';
export { shuffles, SHUFFLE_NAMES, type ShuffleName } from './read/shuffle/index.js';

// bench
export { synthDataset, runBench, writeReport } from './on-demand.js';
export { BUILTIN_PROFILES, projectEpoch, loadProfiles } from './bench/profiles.js';
export type { BenchReport } from './bench/report.js';

// integrity and recovery
export { verifyDataset, extractDataset, reindexDataset, adoptTars } from './on-demand.js';
export type { VerifyOptions, VerifyReport, DamagedSample } from './verify/verify-dataset.js';
export type { ExtractOptions, ExtractResult } from './verify/extract.js';
export type { ReindexOptions, ReindexResult } from './adopt/reindex.js';
export type { AdoptOptions, AdoptResult } from './adopt/adopt-tars.js';

// loader
export { Loader, type LoaderStats } from './read/loader.js';
export type { CacheEvent, CacheOptions, CacheStats } from './cache/shard-cache.js';
export type { LoaderOptions } from './read/loader-options.js';
export { mergeLoaderStates, type LoaderState, type DatasetIdentity } from './read/loader-state.js';
export type { DecodedImage, DecodedSample, DecodeOption, MemberDecoding } from './read/decode-image.js';
