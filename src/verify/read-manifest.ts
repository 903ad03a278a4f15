/** verify's first step: the manifest, or why there is none (an interrupted pack is finished by --resume, not reindex). */
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { MANIFEST_FILE, parseManifest, type Manifest } from '../../formats/manifest.js';
import { redactLocation, resolveLocation } from '../io/location.js';
import { readAll } from '../io/open-source.js';
import { noManifestMessage } from '../read/missing-manifest.js';
import type { Opener } from './verify-dataset.js';

export async function readManifest(location: string, opener: Opener): Promise<Manifest> {
  const file = resolveLocation(location, MANIFEST_FILE);
  let bytes: Uint8Array;
  try {
    bytes = await readAll(file, opener);
  } catch (err) {
    if (isShardkitError(err, ErrorCodes.SHARD_MISSING)) {
      // reindex would make an interrupted pack's partial data look finished (and refuses to): --resume finishes it
      throw new ShardkitError(ErrorCodes.NOT_A_DATASET, noManifestMessage(location), { file: redactLocation(location), cause: err });
    }
    throw err;
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new ShardkitError(ErrorCodes.BAD_MANIFEST, `${redactLocation(file)}: not UTF-8 text`, { file: redactLocation(file), cause });
  }
  return parseManifest(text, redactLocation(file));
}
