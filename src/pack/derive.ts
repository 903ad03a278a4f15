/**
 * `derive`: run passes over an existing dataset, shards to shards, so each researcher makes a variant (another
 * size, a tensor, labels) without touching the raw files. The new manifest records the source's passes followed by
 * the new ones. Resumable like pack.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from '../io/location.js';
import type { Layout } from '../../formats/index-layout.js';
import type { Manifest } from '../../formats/manifest.js';
import { memberPath } from '../../formats/sample.js';
import type { Pass } from '../passes/pass.js';
import { imageConcurrency } from '../passes/image-concurrency.js';
import type { HttpClientOptions } from '../io/http-client.js';
import { openDataset } from '../read/dataset.js';
import { DatasetWriter } from './dataset-writer.js';
import { finishWithPassOutputs, preparePasses } from './run-passes.js';
import { runPipeline, validateConcurrency, validateOnError, type PipelineCounters, type PipelineItem } from './sample-pipeline.js';

export interface DeriveOptions {
  /** Source dataset (directory or URL). */
  dataset: string;
  /** For a source behind an http(s) URL: the HTTP client's options (headers, `sign` for presigned URLs, ...). */
  http?: HttpClientOptions;
  out: string;
  passes: Pass[];
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

export async function derive(options: DeriveOptions): Promise<{ manifest: Manifest; resumedSamples: number }> {
  if (options.passes.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'derive needs at least one --pass');
  expectLocalPath('--out', options.out); // before the source is opened (maybe over http) and the passes list its keys
  const onError = validateOnError(options.onError ?? 'fail');
  const concurrency = validateConcurrency(options.concurrency ?? imageConcurrency().jobs * 2);
  const ds = await openDataset(options.dataset, options.http === undefined ? {} : { http: options.http });
  try {
    await preparePasses(options.passes, () => ds.keys());
    const writer = new DatasetWriter({
      dir: options.out,
      layout: options.layout ?? ds.manifest.layout,
      compress: options.compress ?? ds.manifest.compress,
      ...(options.shardBytes === undefined ? {} : { shardBytes: options.shardBytes }),
      passes: [...ds.manifest.passes, ...options.passes.map((p) => ({ name: p.name, params: p.params }))],
      resume: options.resume ?? false,
      force: options.force ?? false,
    });
    try {
      const resumed = writer.resumedCursor;
      async function* items(): AsyncGenerator<PipelineItem> {
        for await (const entry of ds.entries(resumed > 0 ? { start: (await ds.index.at(resumed)).key } : {})) {
          yield {
            name: entry.key,
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
        ...(options.onProgress ? { onEach: (c: PipelineCounters) => options.onProgress?.({ ...c, total: ds.size - resumed }) } : {}),
      });
      return { manifest: await finishWithPassOutputs(writer, options.passes), resumedSamples: resumed };
    } catch (err) {
      writer.abort();
      throw err;
    }
  } finally {
    await ds.close();
  }
}
