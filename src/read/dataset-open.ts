/**
 * What opening a dataset reads, whatever its size: the manifest, then the index's header and shard table (or a
 * verified local copy of the index in the shard cache). The caller makes the Dataset from the parts.
 */
import path from 'node:path';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { indexRemedy } from '../../formats/index-layout.js';
import { MANIFEST_FILE, parseManifest, type Manifest } from '../../formats/manifest.js';
import { useIndexCopy } from '../cache/index-copy.js';
import type { ByteSource } from '../io/byte-source.js';
import type { HttpClient } from '../io/http-client.js';
import { FileSource } from '../io/file-source.js';
import { HttpSource } from '../io/http-source.js';
import type { IoStats } from '../io/io-stats.js';
import { isRemote, redactLocation, resolveLocation } from '../io/location.js';
import { openByteSource, readAll } from '../io/open-source.js';
import { checkIndexMatchesManifest } from './dataset-checks.js';
import type { OpenDatasetOptions } from './dataset-options.js';
import { DEFAULT_PAGE_CACHE_BYTES, IndexReader, type IndexFallback } from './index-reader.js';
import { noManifestMessage } from './missing-manifest.js';

export interface OpenedParts {
  manifest: Manifest;
  index: IndexReader;
}

/**
 * Reads the manifest and opens the index of the dataset at `location`. On failure, the index source it opened is
 * closed (the client is the caller's to close).
 */
export async function openManifestAndIndex(location: string, options: OpenDatasetOptions, io: IoStats, client: HttpClient | undefined): Promise<OpenedParts> {
  let indexSource: ByteSource | undefined;
  try {
    const manifestLocation = resolveLocation(location, MANIFEST_FILE);
    let text: string;
    try {
      const bytes = await readAll(manifestLocation, client === undefined ? { stats: io } : { stats: io, client });
      text = new TextDecoder().decode(bytes);
    } catch (err) {
      if (isShardkitError(err, ErrorCodes.SHARD_MISSING)) {
        throw new ShardkitError(ErrorCodes.NOT_A_DATASET, noManifestMessage(location), { file: redactLocation(location), cause: err });
      }
      throw err;
    }
    const manifest = parseManifest(text, redactLocation(manifestLocation));
    const indexLocation = resolveLocation(location, manifest.index.file);
    indexSource = isRemote(indexLocation)
      ? new HttpSource(indexLocation, { client: client as HttpClient, size: manifest.index.bytes, sizeMismatchCode: ErrorCodes.INDEX_MISMATCH })
      : await openByteSource(indexLocation, { stats: io }).catch((err: unknown) => {
          if (isShardkitError(err, ErrorCodes.SHARD_MISSING)) {
            throw new ShardkitError(ErrorCodes.TRUNCATED, `${indexLocation}: the index file is missing; ${indexRemedy(manifest.layout)}`, { file: indexLocation, cause: err });
          }
          throw err;
        });
    let fallback: IndexFallback | undefined;
    if (options.cache !== undefined) {
      // a verified local copy of the index (index-copy.ts): lookups without http or NFS, synchronous from the first batch
      const reopen = (): ByteSource => (isRemote(indexLocation) ? new HttpSource(indexLocation, { client: client as HttpClient, size: manifest.index.bytes, sizeMismatchCode: ErrorCodes.INDEX_MISMATCH }) : FileSource.openSync(indexLocation, { stats: io }));
      ({ source: indexSource, fallback } = await useIndexCopy(options.cache, isRemote(location) ? location : path.resolve(location), manifest.index, indexSource, reopen));
    }
    const index = await IndexReader.open(indexSource, options.pageCacheBytes ?? DEFAULT_PAGE_CACHE_BYTES, fallback);
    checkIndexMatchesManifest(index, manifest, redactLocation(location));
    return { manifest, index };
  } catch (err) {
    // nothing may stay open behind a failed open: the index handle
    await indexSource?.close().catch(() => undefined);
    throw err;
  }
}
