/**
 * Why a location holds no dataset, told apart so the advice can succeed: a missing path, a file (the manifest
 * itself, a tar), an interrupted or failed write (its journal says which), a dataset that lost its manifest (shard
 * files: reindex), an empty directory, a folder of datasets, or a source folder (pack it first).
 */
import fs from 'node:fs';
import path from 'node:path';
import { MANIFEST_FILE } from '../../formats/manifest.js';
import { unfinishedWriteAdvice } from '../pack/journal.js';
import { isShardFileName } from '../pack/shard-names.js';
import { isRemote, redactLocation, resolveLocation } from '../io/location.js';

/** The extension of the index file every writer names (commit.ts's INDEX_FILE). */
const INDEX_EXTENSION = '.skidx';

/** Subdirectories looked into for a manifest when a folder holds no dataset itself (a parent of datasets). */
const LOOK_INTO_SUBDIRS = 200;

/** `value` as one shell word: as it is when that is safe, else in single quotes. */
export function shellWord(value: string): string {
  return /^[\w./@%+=:,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The message for a location that has no manifest.json (one line, with what to do next). */
export function noManifestMessage(location: string): string {
  const shown = redactLocation(location);
  if (isRemote(location)) return `${shown} is not a shardkit dataset (no ${MANIFEST_FILE} there): check that the URL is the dataset's directory`;
  const dir = path.dirname(resolveLocation(location, MANIFEST_FILE));
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch {
    return `${shown}: no such directory`;
  }
  if (!stat.isDirectory()) {
    if (path.basename(dir) === MANIFEST_FILE) return `${shown} is the manifest file: pass the dataset directory that holds it (${path.dirname(shown)})`;
    if (dir.endsWith('.tar')) return `${shown} is a tar file, not a dataset directory: make a dataset of tar shards with \`shardkit index ${shellWord(shown)} --out DIR\``;
    return `${shown} is a file, not a dataset directory (the directory that holds ${MANIFEST_FILE})`;
  }
  const unfinished = unfinishedWriteAdvice(location);
  if (unfinished !== undefined) return `${shown} is not a shardkit dataset (no ${MANIFEST_FILE}; ${unfinished})`;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return `${shown} is not a shardkit dataset (no ${MANIFEST_FILE})`;
  }
  const shards = names.filter(isShardFileName).length;
  if (shards > 0 || names.some((name) => name.endsWith(INDEX_EXTENSION))) {
    return (
      `${shown} is not a shardkit dataset (no ${MANIFEST_FILE}, but ${shards} shard file${shards === 1 ? '' : 's'}): ` +
      `if they are intact tar shards, \`shardkit reindex ${shellWord(shown)}\` rebuilds the index and manifest`
    );
  }
  if (names.length === 0) return `${shown} is an empty directory, not a dataset`;
  const datasets = names
    .slice(0, LOOK_INTO_SUBDIRS)
    .filter((name) => fs.existsSync(path.join(dir, name, MANIFEST_FILE)))
    .sort();
  if (datasets.length > 0) {
    const some = datasets.slice(0, 3).map((name) => path.join(shown, name));
    return `${shown} is not a dataset but holds ${datasets.length === 1 ? 'one' : datasets.length}: pass ${datasets.length === 1 ? 'it' : 'one of them'} (${some.join(', ')}${datasets.length > 3 ? ', ...' : ''})`;
  }
  return `${shown} is a source folder, not a dataset (no ${MANIFEST_FILE}): pack it first with \`shardkit pack ${shellWord(shown)}\``;
}
