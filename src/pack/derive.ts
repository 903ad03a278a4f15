/**
 * `derive`: run passes over an existing dataset, shards to shards, so each researcher makes a variant (another
 * size, a tensor, labels) without touching the raw files. The new manifest records the source's passes followed by
 * the new ones, and keeps the source's pass files (classes.txt) and manifest fields unless a new pass writes its
 * own of the same name. Resumable like pack.
 */
import type { CacheOptions } from '../cache/shard-cache.js';
import { withResumeAdvice } from './fs-errors.js';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath, isRemote, resolveLocation } from '../io/location.js';
import type { Layout } from '../../formats/index-layout.js';
import { ADOPTED_EXTRA_KEY, KEY_RULE_EXTRA, MANIFEST_FILE, type Manifest } from '../../formats/manifest.js';
import { memberPath } from '../../formats/sample.js';
import { carriedFiles } from '../../formats/shard-index.js';
import type { Pass } from '../passes/pass.js';
import { imageConcurrency } from '../passes/image-concurrency.js';
import type { HttpClientOptions } from '../io/http-client.js';
import { openDataset, type Dataset } from '../read/dataset.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { DatasetWriter } from './dataset-writer.js';
import { partShardPrefix } from './partition.js';
import { pathOverlap } from './paths.js';
import { checkDeclaredOutputs, finishWithPassOutputs, passStatsOf, preparedOption, preparePasses, type InheritedOutputs } from './run-passes.js';
import { validateDeriveOptions } from './pack-options.js';
import { selectionLabel, selectPositions, type Selection } from './select.js';
import type { Seed } from '../read/shuffle/prng.js';
import { runPipeline, validateConcurrency, validateOnError, type PipelineCounters, type PipelineItem } from './sample-pipeline.js';

export interface DeriveOptions {
  /** Source dataset (directory or URL). */
  dataset: string;
  /** For a source behind an http(s) URL: the HTTP client's options (headers, `sign` for presigned URLs, ...). */
  http?: HttpClientOptions;
  /** For a dataset behind an http(s) URL: a node-local shard cache (openDataset's `cache`). */
  cache?: CacheOptions;
  /** Members up to this size are read (openDataset's `maxMemberBytes`; passes take each member whole). */
  maxMemberBytes?: number;
  out: string;
  passes: Pass[];
  /**
   * Keep only some samples (exemplar selection, see select.ts): `parseSelection('per-class:20')` makes one. With a
   * selection, `passes` may be empty. Recorded in the manifest's `extra.selection`.
   */
  select?: Selection;
  /** The selection's seed (safe integer or string). Default 0. */
  seed?: Seed;
  /** Defaults: the source's layout and compression, 1 GiB shards. */
  layout?: Layout;
  compress?: 'none' | 'lz4';
  shardBytes?: number;
  concurrency?: number;
  onError?: 'fail' | 'skip';
  resume?: boolean;
  force?: boolean;
  onProgress?: (c: PipelineCounters & { total: number }) => void;
}

/**
 * With --force the writer clears its output before the source is read: an output that is the source (through a
 * trailing slash or a symlink) or lies inside it would destroy it. Compared as real paths; an http(s) source has
 * no local path to compare.
 */
function refuseOutInSource(dataset: string, out: string): void {
  if (isRemote(dataset)) return;
  const overlap = pathOverlap(out, path.dirname(resolveLocation(dataset, MANIFEST_FILE)));
  if (overlap === 'same' || overlap === 'inside') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `--out ${out} is the source dataset ${dataset} or inside it; derive into another directory`, { file: out });
  }
}

export interface DeriveResult {
  manifest: Manifest;
  /** Samples of the source that a resume found already written. */
  resumedSamples: number;
  /** Each pass's counters (e.g. tag's `untagged`), by pass name; a resume counts only what it ran. */
  passStats: Record<string, Record<string, number>>;
}

async function* chosenKeys(ds: Dataset, positions: Uint32Array): AsyncGenerator<string> {
  for (const position of positions) yield (await ds.index.at(position)).key;
}

export async function derive(given: DeriveOptions): Promise<DeriveResult> {
  const options = validateDeriveOptions(given);
  expectLocalPath('--out', options.out); // before the source is opened (maybe over http) and the passes list its keys
  refuseOutInSource(options.dataset, options.out);
  checkDeclaredOutputs(options.passes);
  const onError = validateOnError(options.onError ?? 'fail');
  const concurrency = validateConcurrency(options.concurrency ?? imageConcurrency().jobs * 2);
  const ds = await openDataset(options.dataset, {
    ...(options.http === undefined ? {} : { http: options.http }),
    ...(options.cache === undefined ? {} : { cache: options.cache }),
    ...(options.maxMemberBytes === undefined ? {} : { maxMemberBytes: options.maxMemberBytes }),
  });
  try {
    // the source's class list and other pass outputs carry over (read now: a missing file fails before any write)
    const files = new Map<string, Uint8Array>();
    for (const name of carriedFiles(ds.manifest.files)) files.set(name, await ds.readExtraFile(name));
    // not the adoption marker: the variant's shards are shardkit's own, and reindex must read them so
    const { [ADOPTED_EXTRA_KEY]: _adopted, ...extra } = ds.manifest.extra;
    const inherited: InheritedOutputs = { files, extra };
    const part = ds.manifest.part;
    // the samples kept, ascending positions (all of them without a selection)
    const chosen = options.select === undefined ? undefined : await selectPositions(ds, options.select, options.seed ?? 0);
    if (chosen !== undefined && options.select !== undefined) {
      extra.selection = { select: selectionLabel(options.select), seed: options.seed ?? 0, from: { index: ds.manifest.index.crc32c, samples: ds.size }, samples: chosen.length };
    }
    await preparePasses(options.passes, () => (chosen === undefined ? ds.keys() : chosenKeys(ds, chosen)));
    const writer = new DatasetWriter({
      dir: options.out,
      layout: options.layout ?? ds.manifest.layout,
      // the variant keeps the source's keys, and so the rule its names split back by
      ...(ds.manifest.extra[KEY_RULE_EXTRA] === 'path' ? { keyRule: 'path' as const } : {}),
      compress: options.compress ?? ds.manifest.compress,
      ...(options.shardBytes === undefined ? {} : { shardBytes: options.shardBytes }),
      passes: [...ds.manifest.passes, ...options.passes.map((p) => ({ name: p.name, params: p.params }))],
      // a variant of one part of a partitioned pack is that part of the variant: merge takes the derived parts
      ...(part === undefined ? {} : { part, shardPrefix: partShardPrefix(part) }),
      resume: options.resume ?? false,
      command: 'derive',
      force: options.force ?? false,
      ...preparedOption(options.passes),
      // the source's index CRC32C and size: a resume over another source would mix two datasets' samples
      sourceDigest: `${ds.manifest.index.crc32c}/${ds.size}`,
      // a resume keeps the samples another selection chose: refused unless it is the same
      ...(options.select === undefined ? {} : { resumeOptions: { select: selectionLabel(options.select), seed: options.seed ?? 0 } }),
    });
    // what the source left out, the variant lacks too: its list carries over, in key order with this run's skips
    for (const s of ds.manifest.skipped) writer.refuse(s.path, s.reason);
    try {
      const resumed = writer.resumedCursor;
      async function* entries(): AsyncGenerator<IndexEntry> {
        if (chosen === undefined) yield* ds.entries(resumed > 0 ? { start: (await ds.index.at(resumed)).key } : {});
        else for (const position of chosen.subarray(resumed)) yield await ds.index.at(position);
      }
      async function* items(): AsyncGenerator<PipelineItem> {
        for await (const entry of entries()) {
          yield {
            // listed as pack lists it: the first member's path (in the tar layout, the source's own file name)
            name: memberPath(entry.key, entry.members[0]?.ext ?? ''),
            load: async () => {
              const sample = await ds.read(entry);
              const paths = Object.fromEntries(Object.keys(sample.members).map((ext) => [ext, memberPath(sample.key, ext)]));
              return { sample, ctx: { paths } };
            },
          };
        }
      }
      await runPipeline(items(), options.passes, writer, {
        concurrency,
        onError,
        ...(options.onProgress ? { onEach: (c: PipelineCounters) => options.onProgress?.({ ...c, total: (chosen?.length ?? ds.size) - resumed }) } : {}),
      });
      const manifest = await finishWithPassOutputs(writer, options.passes, inherited);
      return { manifest, resumedSamples: resumed, passStats: passStatsOf(options.passes) };
    } catch (err) {
      writer.abort(err);
      throw withResumeAdvice(err);
    }
  } finally {
    await ds.close();
  }
}
