/**
 * DatasetWriter: takes samples, writes shards split at a byte budget (a sample never spans two shards), then the
 * index and, last, the manifest: the commit point. Identical input gives byte-identical output. Everything is
 * written under temporary names; an interrupted writer leaves no manifest, and `resume: true` continues from the
 * last finished shard (see writer-resume.ts) with the same result as an uninterrupted run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { utf8Bytes } from '../../formats/bytes.js';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { Codec, spanLength, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import type { Layout, ShardRecord } from '../../formats/index-layout.js';
import { KEY_RULE_EXTRA, type Manifest, type ManifestPart, type ManifestPass } from '../../formats/manifest.js';
import { encodePackedHeader, PACKED_HEADER_BYTES } from '../../formats/packed-layout.js';
import type { KeyRule, Sample } from '../../formats/sample.js';
import { checkKeyAndExts, checkTarKey, encodeSample, type EncodedSample } from '../../formats/sample-layout.js';
import { assertKeyFits } from '../../formats/index-page.js';
import { TAR_END_BYTES } from '../../formats/tar-header.js';
import { EntrySorter } from './entry-runs.js';
import { IndexFileWriter } from './index-file.js';
import { commitDataset, INDEX_FILE } from './commit.js';
import { JournalWriter, WORK_DIR, isSkippableCode } from './journal.js';
import { prepareDirectory, reservedNameUse } from './output-dir.js';
import { WriteLock } from './write-lock.js';
import { validateOptions, type DatasetWriterOptions, type WriterStats } from './dataset-writer-options.js';
import { ShardFile } from './shard-file.js';
import { STREAM_PIECE_BYTES } from './stream-source.js';
import { closeStreamedSample, openStreamedSample, writeStreamedSample } from './streamed-sample.js';
import { InputDigest, type InputRange } from './input-proof.js';
import { inKeyOrder, type SkippedInput } from './skipped.js';
import { decisiveOptions, reclaimLiveIndex, removeStaleRuns, sumJournal } from './writer-resume.js';

export { INDEX_FILE };
export { DEFAULT_SHARD_BYTES, type DatasetWriterOptions, type WriterStats } from './dataset-writer-options.js';
/** The live index's temporary file, in the work directory (kept for a resume). */
const LIVE_INDEX_FILE = 'index.skidx.tmp';
const SHARD_EXTENSIONS: Record<Layout, string> = { tar: '.tar', packed: '.pack' };

interface OpenShard {
  file: ShardFile;
  name: string;
}

export class DatasetWriter {
  readonly dir: string;
  readonly layout: Layout;
  /** How the samples' keys were cut from file names: tar member names split back the same way. */
  readonly keyRule: KeyRule;
  readonly compress: 'none' | 'lz4';
  readonly shardBytes: number;
  readonly pageSize: number;
  /** Input samples already consumed by the interrupted write this one resumes (0 for a fresh write). */
  readonly resumedCursor: number;
  /** Of a resumed write: the last sample it had written and its input position, for the caller to check its input. */
  readonly resumedLast: { key: string; at: number } | undefined;
  /** Of a resumed write: what proves its input unchanged (empty when the journal holds no proof; see input-proof.ts). */
  readonly resumedInputs: InputRange[];
  /** The input samples consumed since the last shard, for the journal: pack notes each (see input-proof.ts). */
  readonly inputDigest: InputDigest;
  private readonly prefix: string;
  private readonly firstShard: number;
  private readonly passes: ManifestPass[];
  private readonly sync: boolean;
  private readonly part: ManifestPart | undefined;
  private readonly workDir: string;
  /** This writer's hold on its directory, from the constructor until finish() or abort(). */
  private readonly lock: WriteLock;
  private readonly journal: JournalWriter;
  private readonly sorter: EntrySorter;
  /** The index, built as entries arrive while they arrive in key order (a fresh write only); see addLive. */
  private live: IndexFileWriter | undefined;
  private readonly shards: ShardRecord[];
  private readonly skipped: SkippedInput[];
  private skippedJournaled = 0;
  /** Inputs refused before they became samples (see refuse); not journaled. */
  private readonly refused: SkippedInput[] = [];
  private readonly files = new Map<string, Uint8Array>();
  private readonly extra: Record<string, unknown> = {};
  private current: OpenShard | undefined;
  /** Where streamed samples are read into (see addStreamed), made at the first. */
  private streamPiece: Uint8Array | undefined;
  private cursor: number;
  /** The last sample written and its input position (two fields: no object per sample on the write path). */
  private lastKey: string | undefined;
  private lastAt = -1;
  private finished = false;
  private readonly onShard: ((shard: ShardRecord) => void) | undefined;
  /** Totals already recorded in the journal (the journal stores per-shard differences). */
  private journaled = { originalBytes: 0, storedBytes: 0, members: 0 };
  readonly stats: WriterStats = { samples: 0, members: 0, originalBytes: 0, storedBytes: 0, shards: 0, oversizeSamples: 0 };

  constructor(options: DatasetWriterOptions) {
    const o = validateOptions(options);
    this.dir = path.resolve(o.dir);
    this.layout = o.layout;
    this.keyRule = o.keyRule;
    // readers of the names (reindex) need the rule; WebDataset's is the default and goes unrecorded
    if (o.keyRule === 'path') this.extra[KEY_RULE_EXTRA] = 'path';
    this.compress = o.compress;
    this.shardBytes = o.shardBytes;
    this.pageSize = o.pageSize;
    this.prefix = o.shardPrefix;
    this.firstShard = o.firstShard;
    this.part = o.part;
    this.passes = o.passes;
    this.sync = o.sync;
    this.onShard = options.onShard;
    this.workDir = path.join(this.dir, WORK_DIR);
    this.journal = new JournalWriter(this.dir);
    const decisive = decisiveOptions(o, options);
    this.lock = WriteLock.acquire(this.dir, o.command);
    let resumed: ReturnType<typeof prepareDirectory>;
    try {
      resumed = prepareDirectory(this.dir, this.workDir, options.resume === true, options.force === true, decisive, this.lock);
    } catch (err) {
      this.lock.release();
      throw err;
    }
    // from here the directory is shardkit's and may hold what this open began: a failure leaves it as a killed
    // writer would (abandon), so the next writer, this process too, takes the lock over and finds its state
    try {
      const done = sumJournal(resumed ?? []);
      this.shards = done.shards;
      this.skipped = done.skipped;
      this.resumedInputs = done.inputs;
      this.cursor = done.cursor;
      if (done.last !== undefined) {
        this.lastKey = done.last.key;
        this.lastAt = done.last.at;
      }
      if (resumed !== undefined) {
        Object.assign(this.stats, done.totals);
        this.stats.shards = this.shards.length;
        this.journaled = { originalBytes: this.stats.originalBytes, storedBytes: this.stats.storedBytes, members: this.stats.members };
        this.skippedJournaled = this.skipped.length;
        removeStaleRuns(this.workDir, done.runs);
        this.journal.rewrite({ options: decisive, shards: resumed });
      } else {
        this.journal.begin(decisive);
      }
      this.resumedCursor = this.cursor;
      this.resumedLast = this.lastRecord();
      this.sorter = new EntrySorter(this.workDir, done.runs, o.runEntries);
      // the live index continues from its checkpoint, or starts afresh with the write; once dropped, it stays dropped
      const liveFile = { tmpPath: path.join(this.workDir, LIVE_INDEX_FILE) };
      if (done.index !== undefined) {
        reclaimLiveIndex(this.dir, liveFile.tmpPath);
        this.live = new IndexFileWriter(path.join(this.dir, INDEX_FILE), this.layout, this.pageSize, { ...liveFile, resume: done.index });
      } else if ((resumed === undefined || resumed.length === 0) && options.liveIndex !== false) {
        this.live = new IndexFileWriter(path.join(this.dir, INDEX_FILE), this.layout, this.pageSize, liveFile);
      }
      // after the output is made: its mkdir in a source that holds it is no change to the source
      this.inputDigest = new InputDigest();
    } catch (err) {
      this.lock.abandon();
      throw err;
    }
  }

  /**
   * Appends a sample to the current shard (opening the next shard when the budget would be exceeded).
   * @throws ShardkitError INVALID_ARG for a sample that is not `{ key: string, members: { [ext]: Uint8Array } }`
   *   (naming the key and member), UNSAFE_PATH for a name that cannot be stored, TOO_LARGE for a key the index
   *   cannot hold: all before anything is written, so the writer stays usable.
   */
  add(sample: Sample): void {
    this.assertOpen();
    // the whole sample is checked before anything changes (encodeSample checks it first, and writes nothing): a
    // refused add leaves the writer as it was, usable
    const encoded = encodeSample(sample, this.layout, this.compress === 'lz4' ? Codec.lz4 : Codec.none, this.keyRule);
    // the index limits keys: refuse here, before any byte is written, not at the end of the pack
    assertKeyFits(sample.key, this.pageSize);
    this.addEncoded(sample.key, encoded);
  }

  /**
   * {@link DatasetWriter.add} for a sample already encoded for this writer's layout and codec (by a reader thread,
   * say): `encodeSample(sample, layout, codec)` with a key that {@link assertKeyFits}. With `retain`, the writer
   * may keep referencing the parts' memory (adjacent parts of consecutive samples then go out in one write, without
   * a copy) until {@link DatasetWriter.release}; without it, nothing is referenced once this returns. `keyBytes`:
   * the key's UTF-8, when the caller has it (the index may keep the view).
   */
  addEncoded(key: string, encoded: EncodedSample, retain = false, keyBytes?: Uint8Array): void {
    this.assertOpen();
    this.append(key, encoded, keyBytes ?? utf8Bytes(key));
    if (!retain) this.release();
  }

  /**
   * Writes sample `key` straight from its source files (`paths[i]` is the file of member `exts[i]`), each read in
   * pieces: for files too large to hold in one buffer (see streamed-sample.ts). The same bytes as
   * {@link DatasetWriter.addEncoded} would write for them, members stored uncompressed. Returns the bytes read.
   * @throws ShardkitError UNSAFE_PATH, TOO_LARGE or INVALID_ARG for names or keys the dataset cannot hold, as
   *   {@link DatasetWriter.add}; INPUT or INPUT_CHANGED for a file that cannot be read or changed while it was (with
   *   `verifySource`, also between two reads). Then nothing of the sample stays in the shard: the writer is usable.
   */
  addStreamed(key: string, exts: readonly string[], paths: readonly string[], verifySource = false): number {
    this.assertOpen();
    checkKeyAndExts(key, exts);
    assertKeyFits(key, this.pageSize);
    if (this.layout === 'tar') checkTarKey(key, this.keyRule, exts);
    const sample = openStreamedSample(key, exts, paths, this.layout, this.compress === 'lz4' ? Codec.lz4 : Codec.none);
    try {
      // the files are open and stat'ed: what fails from here (a file changed while read) is rare, and may have closed
      // the shard before this sample (as any sample that fits no more would have)
      const oversize = this.beforeSample(sample.bytes);
      const shard = this.current ?? this.openShard();
      const mark = shard.file.mark();
      try {
        this.streamPiece ??= new Uint8Array(STREAM_PIECE_BYTES);
        const { spanStart, members } = writeStreamedSample(sample, shard.file, this.streamPiece, verifySource);
        const entry = { key, shard: this.shards.length, offset: mark.bytes + spanStart, length: spanLength(members), members };
        const keyBytes = utf8Bytes(key);
        if (this.live !== undefined) this.addLive(this.live, entry, keyBytes);
        else this.sorter.add(entry, keyBytes);
        this.afterSample(key, members, sample.sourceBytes);
      } catch (err) {
        if (oversize) this.stats.oversizeSamples--;
        shard.file.rewind(mark);
        // a shard opened for this sample alone goes: the next sample opens it again, as if this one had never come
        if (shard.file.samples === 0) {
          shard.file.discard();
          this.current = undefined;
        }
        throw err;
      }
      shard.file.samples++;
    } finally {
      closeStreamedSample(sample.members);
    }
    return sample.sourceBytes;
  }

  /** Lets go of the caller memory that `addEncoded(..., true)` may still reference (writes or copies it). */
  release(): void {
    this.current?.file.settle();
  }

  private append(key: string, encoded: EncodedSample, keyBytes: Uint8Array): void {
    this.beforeSample(encoded.bytes);
    const shard = this.current ?? this.openShard();
    const entry = { key, shard: this.shards.length, offset: shard.file.bytes + encoded.spanStart, length: spanLength(encoded.members), members: encoded.members };
    // indexed first: a sample the index refuses (TOO_LARGE) leaves no bytes in the shard
    if (this.live !== undefined) this.addLive(this.live, entry, keyBytes);
    else this.sorter.add(entry, keyBytes);
    for (const part of encoded.parts) shard.file.write(part);
    shard.file.samples++;
    this.afterSample(key, encoded.members, encoded.originalBytes);
  }

  /**
   * Closes the current shard when a sample of `bytes` would take it over budget; counts a sample over budget alone
   * (returns whether it did).
   */
  private beforeSample(bytes: number): boolean {
    const trailer = this.layout === 'tar' ? TAR_END_BYTES : 0;
    if (this.current !== undefined && this.current.file.samples > 0 && this.current.file.bytes + bytes + trailer > this.shardBytes) {
      this.closeShard();
    }
    const at = this.current?.file.bytes ?? (this.layout === 'packed' ? PACKED_HEADER_BYTES : 0);
    const oversize = (this.current === undefined || this.current.file.samples === 0) && at + bytes + trailer > this.shardBytes;
    if (oversize) this.stats.oversizeSamples++;
    return oversize;
  }

  /** Counts a sample written. */
  private afterSample(key: string, members: readonly MemberEntry[], originalBytes: number): void {
    this.stats.samples++;
    this.stats.members += members.length;
    this.stats.originalBytes += originalBytes;
    for (const m of members) this.stats.storedBytes += m.storedSize;
    this.lastKey = key;
    this.lastAt = this.cursor;
    this.cursor++;
  }

  /** Records an input sample left out (`--on-error skip`): listed in the manifest, and counted for resume. */
  skip(sourcePath: string, reason: string): void {
    this.assertOpen();
    this.skipped.push({ path: sourcePath, reason });
    this.cursor++;
  }

  /**
   * Lists an input that never became a sample of this write (pack's walk refused its name; derive's source had left
   * it out) in the manifest's skipped list, in key order with the others. Not counted in the resume cursor, and not
   * journaled: a resumed pack walks the whole source again and refuses it again (a resumed derive reads the source's
   * list again).
   */
  refuse(inputPath: string, reason: string): void {
    this.refused.push({ path: inputPath, reason });
  }

  /**
   * A file for the dataset directory (e.g. classes.txt), written before the manifest and listed in it.
   * @param from who asked for it, for the error message (e.g. `pass notes`).
   * @throws ShardkitError INVALID_ARG for a path, a dot-name, or a name the dataset uses itself (see reservedNameUse).
   */
  addFile(name: string, bytes: Uint8Array, from?: string): void {
    const by = from === undefined ? '' : ` (from ${from})`;
    if (!/^[^/\\\0]+$/.test(name) || name.startsWith('.')) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `cannot add dataset file ${JSON.stringify(name)}${by}: expected a plain file name that does not start with "."`);
    }
    const use = reservedNameUse(name);
    if (use !== undefined) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `cannot add dataset file ${JSON.stringify(name)}${by}: the dataset uses that name for ${use}; choose another name`);
    }
    this.files.set(name, bytes);
  }

  /** A field for the manifest's `extra` object (e.g. the class list). */
  setExtra(key: string, value: unknown): void {
    this.extra[key] = value;
  }

  /** Writes the last shard, the index, extra files and the manifest; removes the work directory. */
  async finish(): Promise<Manifest> {
    this.assertOpen();
    if (this.current !== undefined) this.closeShard();
    this.finished = true;
    // the index built as the entries came, when they came in order; else one from the sorted runs
    const live = this.live;
    this.live = undefined;
    try {
      return this.commit(live);
    } finally {
      this.lock.release();
    }
  }

  private commit(live: IndexFileWriter | undefined): Manifest {
    const manifest = commitDataset({
      dir: this.dir,
      entries: live ?? this.sorter.sorted(),
      shards: this.shards,
      layout: this.layout,
      compress: this.compress,
      pageSize: this.pageSize,
      sync: this.sync,
      passes: this.passes,
      files: this.files,
      skipped: this.refused.length === 0 ? this.skipped : inKeyOrder([...this.skipped, ...this.refused]),
      extra: this.extra,
      ...(this.part === undefined ? {} : { part: this.part }),
    });
    fs.rmSync(this.workDir, { recursive: true, force: true });
    return manifest;
  }

  /**
   * Stops without a manifest, deleting the shard being written; finished shards stay for `--resume`. `failure`, the
   * error that stopped the write, is recorded in the journal (see JournalFailure) for the advice its directory gets.
   */
  abort(failure?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    if (isShardkitError(failure)) {
      const input = isSkippableCode(failure.code) ? failure.file : undefined;
      try {
        // the advice for this directory then says what can succeed, not a resume that fails the same way
        // the input error's own words, without the advice stoppedOnInput added to them
        const words = isShardkitError(failure.cause, failure.code) ? failure.cause.stableMessage : failure.stableMessage;
        this.journal.fail({ code: failure.code, message: words, ...(input === undefined ? {} : { input }) });
      } catch {
        // the journal cannot be written (the disk that failed): it then reads as interrupted, which it also is
      }
    }
    this.current?.file.discard();
    this.current = undefined;
    this.sorter.abort();
    // the live index stays, with the checkpoints a resume continues from
    this.live?.close();
    this.live = undefined;
    this.lock.release();
  }

  /**
   * Feeds the index being built as entries come. The first entry out of key order (or a duplicate key) drops it:
   * its entries so far go to the sorted runs, and the index is built from those at the end. Any other failure (a
   * record too large for any page, a write that fails: a full disk) is thrown as it is, and the index file stays
   * with its checkpoints for a `--resume` (drained, it was deleted, and no resume could continue).
   */
  private addLive(live: IndexFileWriter, entry: IndexEntry, keyBytes: Uint8Array): void {
    try {
      live.add(entry, keyBytes);
    } catch (err) {
      if (!isShardkitError(err) || err.code !== ErrorCodes.DUPLICATE_KEY) throw err;
      this.live = undefined;
      for (const e of live.drain()) this.sorter.add(e);
      this.sorter.add(entry, keyBytes);
    }
  }

  private assertOpen(): void {
    if (this.finished) throw new ShardkitError(ErrorCodes.CLOSED, `writer for ${this.dir} is already finished`);
  }

  private openShard(): OpenShard {
    const name = `${this.prefix}${String(this.firstShard + this.shards.length).padStart(6, '0')}${SHARD_EXTENSIONS[this.layout]}`;
    const finalPath = path.join(this.dir, name);
    const file = new ShardFile(`${finalPath}.tmp`, finalPath);
    if (this.layout === 'packed') file.write(encodePackedHeader());
    this.current = { file, name };
    return this.current;
  }

  private lastRecord(): { key: string; at: number } | undefined {
    return this.lastKey === undefined ? undefined : { key: this.lastKey, at: this.lastAt };
  }

  private closeShard(): void {
    const shard = this.current as OpenShard;
    this.current = undefined;
    if (this.layout === 'tar') shard.file.zeros(TAR_END_BYTES);
    const { crc32c, fingerprint } = shard.file.commit(this.sync);
    const record: ShardRecord = { file: shard.name, bytes: shard.file.bytes, samples: shard.file.samples, crc32c, fingerprint };
    this.shards.push(record);
    this.stats.shards = this.shards.length;
    this.sorter.flush();
    const index = this.live?.checkpoint(this.sync);
    this.journal.append({
      type: 'shard',
      shard: record,
      runs: this.sorter.runCount,
      ...(index === undefined ? {} : { index }),
      cursor: this.cursor,
      ...(this.lastKey === undefined ? {} : { last: { key: this.lastKey, at: this.lastAt } }),
      ...this.inputDigest.seal(),
      skipped: this.skipped.slice(this.skippedJournaled),
      originalBytes: this.stats.originalBytes - this.journaled.originalBytes,
      storedBytes: this.stats.storedBytes - this.journaled.storedBytes,
      members: this.stats.members - this.journaled.members,
    });
    this.journaled = { originalBytes: this.stats.originalBytes, storedBytes: this.stats.storedBytes, members: this.stats.members };
    this.skippedJournaled = this.skipped.length;
    this.onShard?.(record);
  }
}
