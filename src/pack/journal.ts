/**
 * The resume journal: one JSON line per finished shard, appended after the shard was renamed into place and its
 * index entries were saved (the live index's checkpoint, or a run file of them). A pack killed at any moment leaves
 * at most a partial last line, which is ignored; `--resume` keeps every shard the journal lists and redoes the rest.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { resolveLocation } from '../io/location.js';
import { replaceFile } from './replace-file.js';
import { fsCall } from './fs-errors.js';
import type { IndexCheckpoint } from './index-file.js';

export const WORK_DIR = '.shardkit-work';
export const JOURNAL_FILE = 'journal.jsonl';

export interface JournalBegin {
  type: 'begin';
  /** The options that decide the bytes: a resume must use the same. */
  options: Record<string, unknown>;
}

export interface JournalShard {
  type: 'shard';
  shard: ShardRecord;
  /** Run files holding the index entries of this and earlier shards (none while the index is built live). */
  runs: number;
  /** The live index as it stood after this shard, when the writer was building it as entries came (see dataset-writer.ts). */
  index?: IndexCheckpoint;
  /** Input samples consumed (added or skipped) when this shard was finished. */
  cursor: number;
  /**
   * The last sample written so far and its place among the input samples (0-based): a resume checks that the source
   * still has that key there, since it skips `cursor` samples by count.
   */
  last?: { key: string; at: number };
  /** SHA-256 of the input samples consumed since the previous line, and when their run began (see input-proof.ts). */
  inputs?: string;
  since?: number;
  /** Skips recorded since the previous line. */
  skipped: { path: string; reason: string }[];
  originalBytes: number;
  storedBytes: number;
  members: number;
}

export interface JournalState {
  options: Record<string, unknown>;
  shards: JournalShard[];
}

export function journalPath(outDir: string): string {
  return path.join(outDir, WORK_DIR, JOURNAL_FILE);
}

export function readJournal(outDir: string): JournalState | undefined {
  const file = journalPath(outDir);
  if (!fs.existsSync(file)) return undefined;
  const lines = fsCall('read', file, () => fs.readFileSync(file, 'utf8')).split('\n');
  const parsed: (JournalBegin | JournalShard)[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    try {
      parsed.push(JSON.parse(line) as JournalBegin | JournalShard);
    } catch {
      break; // a line cut short by a kill: everything before it stands
    }
  }
  const begin = parsed[0];
  if (begin?.type !== 'begin') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: resume journal is damaged; start over with --force`, { file });
  }
  return { options: begin.options, shards: parsed.slice(1).filter((l): l is JournalShard => l.type === 'shard') };
}

/**
 * For the error that a local dataset location (a path or a file:// URL) has no manifest: when an interrupted pack or
 * derive left its journal there, how far it got and how to finish it ("an interrupted pack left 35743 samples in 6
 * finished shards: ..."); else undefined.
 */
export function unfinishedWriteAdvice(location: string): string | undefined {
  const dir = path.dirname(resolveLocation(location, JOURNAL_FILE));
  try {
    const state = readJournal(dir);
    if (state === undefined) return undefined;
    const samples = state.shards.reduce((n, line) => n + line.shard.samples, 0);
    if (!Number.isSafeInteger(samples)) throw new Error('a shard line without its sample count');
    // derive records the source dataset it read (a resume checks it); pack does not
    const command = state.options.source === undefined ? 'pack' : 'derive';
    return `an interrupted ${command} left ${samples} samples in ${state.shards.length} finished shards: finish it with \`shardkit ${command} --resume\` (its ${WORK_DIR}/ journal is there)`;
  } catch {
    return `an interrupted write left a damaged journal in ${WORK_DIR}/: start over with \`--force\``;
  }
}

export class JournalWriter {
  private readonly file: string;

  constructor(outDir: string) {
    this.file = journalPath(outDir);
  }

  begin(options: Record<string, unknown>): void {
    this.replace(`${JSON.stringify({ type: 'begin', options } satisfies JournalBegin)}\n`);
  }

  /** Rewrites the journal to exactly `state` (a resume drops what followed the last good line). */
  rewrite(state: JournalState): void {
    const lines = [{ type: 'begin', options: state.options }, ...state.shards].map((l) => JSON.stringify(l)).join('\n');
    this.replace(`${lines}\n`);
  }

  /** Writes the whole journal aside and renames it over the old one: a kill leaves one or the other, never an empty file. */
  private replace(text: string): void {
    replaceFile(this.file, new TextEncoder().encode(text));
  }

  append(line: JournalShard): void {
    fsCall('write', this.file, () => fs.appendFileSync(this.file, `${JSON.stringify(line)}\n`));
  }
}
