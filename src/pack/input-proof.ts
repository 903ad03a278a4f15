/**
 * What a `--resume` proves about the samples the interrupted pack wrote (issue 26, item 2). A resume skips the
 * samples already written by count; the source could have changed under them (a sample deleted and another added,
 * a file rewritten) and the dataset would mix old and new. Two checks, at the cost of one walk with one stat per
 * file of the written part:
 *
 * 1. The journal records, per finished shard, a SHA-256 over the walk's records of the input samples it consumed
 *    (key and member extensions, in walk order) and the time its run began. The resume's walk hashes the same
 *    records for the same positions: a sample deleted, added, renamed, a member added or removed, changes a digest.
 * 2. Every file of those samples must have a ctime no later than the start of the run that read them. The kernel
 *    sets ctime at every write, truncate, rename, link, chmod and utimes (which is how mtime is set back), and no
 *    call sets ctime itself: a file whose ctime is older than the read was not changed since, so its size, mtime
 *    and bytes are those packed. It refuses more than it must (a chmod of a written file); `--force` starts over.
 *    Files past the resume position may change freely (they are read now). Clocks: on a network file system ctime
 *    is the server's time; a server clock running ahead makes a resume refuse, never accept a change.
 */
import type { Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { memberPath } from '../../formats/sample.js';
import { nodeCrypto } from '../lazy-crypto.js';

/** One finished shard's proof, as the journal keeps it. */
export interface InputRange {
  /** Input samples consumed when the shard was finished (the journal line's cursor). */
  end: number;
  /** SHA-256 (hex) of the records of the input samples since the previous line. */
  inputs: string;
  /** When the run that read them began (ms since the epoch). */
  since: number;
}

/** Record of one input sample: key and member extensions, NUL-separated (no key or extension holds a NUL). */
function record(key: string, exts: readonly string[]): string {
  return `${key}\0${exts.join('\0')}\n`;
}

/** The writer's side: the records of the samples consumed since the last shard. */
export class InputDigest {
  private hash: Hash = nodeCrypto().createHash('sha256');
  private noted = false;
  /** The start of this run: files read by it were changed, if ever, before this. */
  readonly since = Date.now();

  /** Notes the next input sample consumed (written or skipped), in walk order. */
  note(key: string, exts: readonly string[]): void {
    this.hash.update(record(key, exts));
    this.noted = true;
  }

  /** The proof fields of a journal line for the samples since the last call; none when no sample was noted (derive). */
  seal(): { inputs: string; since: number } | Record<string, never> {
    if (!this.noted) return {};
    const inputs = this.hash.digest('hex');
    this.hash = nodeCrypto().createHash('sha256');
    return { inputs, since: this.since };
  }
}

/**
 * The resume's side: fed the walk's samples at positions 0, 1, ... up to the last range's end, throws
 * INPUT_CHANGED at the first difference.
 */
export class InputCheck {
  private hash: Hash = nodeCrypto().createHash('sha256');
  private range = 0;
  private start = 0;
  private firstKey: string | undefined;

  constructor(
    private readonly root: string,
    private readonly ranges: readonly InputRange[],
    private readonly followSymlinks: boolean,
  ) {}

  /** Checks the sample at walk position `at` (ranges must cover 0..at). */
  check(at: number, key: string, exts: readonly string[]): void {
    const r = this.ranges[this.range];
    if (r === undefined) return;
    this.firstKey ??= key;
    this.hash.update(record(key, exts));
    for (const ext of exts) this.unchangedSince(path.join(this.root, memberPath(key, ext)), r.since, key);
    if (at + 1 < r.end) return;
    const digest = this.hash.digest('hex');
    if (digest !== r.inputs) {
      throw changed(`its samples ${this.start + 1} to ${r.end} (${JSON.stringify(this.firstKey)} to ${JSON.stringify(key)}) are not those the interrupted pack wrote: a sample or member was added, removed or renamed there`);
    }
    this.range++;
    this.start = r.end;
    this.firstKey = undefined;
    this.hash = nodeCrypto().createHash('sha256');
  }

  private unchangedSince(file: string, since: number, key: string): void {
    let ctimeMs: number;
    try {
      ctimeMs = (this.followSymlinks ? fs.statSync(file) : fs.lstatSync(file)).ctimeMs;
    } catch (cause) {
      throw changed(`${file} of sample ${JSON.stringify(key)} cannot be read now (${(cause as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (ctimeMs > since) {
      throw changed(`${file} of sample ${JSON.stringify(key)} changed (ctime ${new Date(ctimeMs).toISOString()}) after the interrupted pack read it (from ${new Date(since).toISOString()})`);
    }
  }
}

function changed(why: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INPUT_CHANGED, `the source changed since the interrupted pack: ${why}; start over with --force`);
}
