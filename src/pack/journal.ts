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

/**
 * Written when a pack or derive stopped on an error (not when it was killed): what failed, so the advice for the
 * directory says what can succeed (a resume fails the same way until the cause is fixed). A resume drops it.
 */
export interface JournalFailure {
  type: 'failed';
  code: string;
  /** The error's words that are the same every run (ShardkitError.stableMessage). */
  message: string;
  /** The input it failed on, when one is known. */
  input?: string;
}

export interface JournalState {
  options: Record<string, unknown>;
  shards: JournalShard[];
  /** Why the write stopped, when it stopped on an error after its last finished shard. */
  failure?: JournalFailure;
}

export function journalPath(outDir: string): string {
  return path.join(outDir, WORK_DIR, JOURNAL_FILE);
}

export function readJournal(outDir: string): JournalState | undefined {
  const file = journalPath(outDir);
  if (!fs.existsSync(file)) return undefined;
  const lines = fsCall('read', file, () => fs.readFileSync(file, 'utf8')).split('\n');
  const parsed: JournalLine[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    try {
      parsed.push(JSON.parse(line) as JournalLine);
    } catch {
      break; // a line cut short by a kill: everything before it stands
    }
  }
  const begin = parsed[0];
  if (begin?.type !== 'begin') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: resume journal is damaged; start over with --force`, { file });
  }
  const last = parsed[parsed.length - 1] as JournalLine;
  return {
    options: begin.options,
    shards: parsed.slice(1).filter((l): l is JournalShard => l.type === 'shard'),
    ...(last.type === 'failed' ? { failure: last } : {}),
  };
}

type JournalLine = JournalBegin | JournalShard | JournalFailure;

/** Codes of input a write can leave out with `--on-error skip` (sample-pipeline.ts skips exactly these). */
const SKIPPABLE = new Set<string>([ErrorCodes.INPUT, ErrorCodes.INPUT_CHANGED, ErrorCodes.TOO_LARGE, ErrorCodes.UNSAFE_PATH]);

/** True when `code` is an input error that `--on-error skip` leaves out instead of stopping. */
export function isSkippableCode(code: string): boolean {
  return SKIPPABLE.has(code);
}

/** The command that finishes a write into `out`: the same source and options plus --resume. */
function resumeCommand(command: string, out: string): string {
  const word = /^[\w./@%+=:,-]+$/.test(out) ? out : `'${out.replace(/'/g, `'\\''`)}'`;
  return `\`shardkit ${command} ${command === 'pack' ? '<src>' : '<dataset>'} --out ${word} --resume\``;
}

/** What to do after a write failed on `failure`: fix the cause (or skip such inputs) and resume, or start over. */
export function failureAdvice(command: string, failure: Pick<JournalFailure, 'code' | 'input'>, out: string): string {
  const resume = resumeCommand(command, out);
  // one input file that --on-error skip can leave out (a walk-wide cause, such as folded names, has no file)
  if (isSkippableCode(failure.code) && failure.input !== undefined) {
    return `fix or remove ${failure.input} and finish with ${resume}, or add \`--on-error skip\` to leave such inputs out; \`--force\` starts over`;
  }
  return `${resume} fails the same way until the cause is fixed; start over with \`--force\` (also to change an option)`;
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
    const kept = `${samples} sample${samples === 1 ? '' : 's'} in ${state.shards.length} finished shard${state.shards.length === 1 ? '' : 's'}`;
    if (state.failure !== undefined) {
      const { code, message } = state.failure;
      return `a ${command} failed after ${kept} (${code}: ${message}): ${failureAdvice(command, state.failure, location)}`;
    }
    return `an interrupted ${command} left ${kept}: finish it with ${resumeCommand(command, location)} (same source and options; its ${WORK_DIR}/ journal is there)`;
  } catch {
    return `an interrupted write left a damaged journal in ${WORK_DIR}/: start over with \`--force\``;
  }
}

/** What an interrupted write in `dir` keeps: its finished shards and their samples; undefined without a journal. */
export function journalProgress(dir: string): { samples: number; shards: number } | undefined {
  const state = readJournal(dir);
  if (state === undefined) return undefined;
  return { samples: state.shards.reduce((n, line) => n + line.shard.samples, 0), shards: state.shards.length };
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

  /** Records why the write stopped (see JournalFailure); the journal stays valid for a resume. */
  fail(failure: Omit<JournalFailure, 'type'>): void {
    this.append({ type: 'failed', ...failure });
  }

  append(line: JournalShard | JournalFailure): void {
    fsCall('write', this.file, () => fs.appendFileSync(this.file, `${JSON.stringify(line)}\n`));
  }
}
