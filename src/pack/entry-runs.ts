/**
 * External sort of index entries in bounded memory. Entries that arrive in key order (a pack walks sorted paths)
 * stream straight into the current run file; entries out of order are buffered up to `runEntries`, sorted and
 * spilled as a run. `sorted()` merges the runs with a heap, reading each through a small window. Run files also
 * carry the entries of finished shards across a `--resume`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ByteReader, ByteWriter, utf8Bytes } from '../../formats/bytes.js';
import { ErrorCodes } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { MAX_PAGE_SIZE } from '../../formats/index-layout.js';
import { LeafRecordEncoder, decodeLeafRecord } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { ShardkitError } from '../../formats/errors.js';
import { fsCall } from './fs-errors.js';
import { createFresh } from './replace-file.js';

const READ_WINDOW_BYTES = 256 << 10;
/**
 * Runs merged at once. More runs (a pack with thousands of shards flushes one run per shard) are merged in
 * groups first, so open files and read buffers stay bounded (64 x 256 KiB) whatever the dataset size.
 */
export const MERGE_FAN_IN = 64;

export function runFileName(n: number): string {
  return `run-${String(n).padStart(6, '0')}.bin`;
}

/** A run file written entry by entry, each record standalone (no reference to the one before). */
class RunFile {
  private readonly fd: number;
  private readonly encoder = new LeafRecordEncoder();
  private readonly out = new ByteWriter(1 << 16);
  count = 0;

  constructor(private readonly file: string) {
    this.fd = createFresh(file);
  }

  append(entry: IndexEntry, keyBytes: Uint8Array = utf8Bytes(entry.key)): void {
    this.encoder.reset();
    const record = this.encoder.encode(entry, keyBytes);
    if (record.length > MAX_PAGE_SIZE) {
      throw new ShardkitError(ErrorCodes.TOO_LARGE, `sample "${entry.key}" needs ${record.length} index bytes, more than the largest page (${MAX_PAGE_SIZE})`, { key: entry.key });
    }
    this.out.varint(record.length).bytes(record);
    this.count++;
    if (this.out.length >= READ_WINDOW_BYTES) this.drain();
  }

  close(): void {
    try {
      this.drain();
    } finally {
      fs.closeSync(this.fd);
    }
  }

  /** Closes after a failure, keeping nothing open (the file is left for a resume to remove). */
  abandon(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
  }

  private drain(): void {
    const bytes = this.out.view_();
    let off = 0;
    while (off < bytes.length) off += fsCall('write', this.file, () => fs.writeSync(this.fd, bytes, off, bytes.length - off));
    this.out.reset();
  }
}

function writeRun(file: string, entries: Iterable<IndexEntry>): void {
  const run = new RunFile(file);
  try {
    for (const entry of entries) run.append(entry);
    run.close();
  } catch (err) {
    run.abandon();
    throw err;
  }
}

export class EntrySorter {
  private buffer: IndexEntry[] = [];
  /** The run being streamed while entries arrive in key order, and its last key. */
  private stream: RunFile | undefined;
  private lastKey = '';

  /** `runs`: run files already on disk in `dir` (a resumed writer keeps the runs of finished shards). */
  constructor(
    private readonly dir: string,
    private runs = 0,
    private readonly runEntries = 100_000,
  ) {}

  get runCount(): number {
    return this.runs;
  }

  /** Adds an entry; `keyBytes`: its key's UTF-8, if at hand. */
  add(entry: IndexEntry, keyBytes?: Uint8Array): void {
    if (this.buffer.length === 0 && (this.stream === undefined || compareKeys(entry.key, this.lastKey) > 0)) {
      this.stream ??= new RunFile(path.join(this.dir, runFileName(this.runs)));
      this.stream.append(entry, keyBytes);
      this.lastKey = entry.key;
      if (this.stream.count >= this.runEntries) this.closeStream();
      return;
    }
    // out of order: the streamed run ends here; the rest of this run is sorted in memory
    this.closeStream();
    this.buffer.push(entry);
    if (this.buffer.length >= this.runEntries) this.flush();
  }

  /** Ends the current run: the streamed one, or the buffered entries sorted (nothing when empty). */
  flush(): void {
    this.closeStream();
    if (this.buffer.length === 0) return;
    this.buffer.sort((a, b) => compareKeys(a.key, b.key));
    writeRun(path.join(this.dir, runFileName(this.runs)), this.buffer);
    this.buffer = [];
    this.runs++;
  }

  /** Stops after a failure: closes the streamed run without counting it (a resume removes it). */
  abort(): void {
    this.stream?.abandon();
    this.stream = undefined;
  }

  private closeStream(): void {
    if (this.stream === undefined) return;
    this.stream.close();
    this.stream = undefined;
    this.runs++;
  }

  /**
   * All entries in key order: flushes the buffer, merges groups of MERGE_FAN_IN runs into `merge-N.bin` files
   * until at most MERGE_FAN_IN remain, then merges those. The numbered runs stay untouched (a resume needs them).
   */
  *sorted(): Generator<IndexEntry> {
    this.flush();
    let files = Array.from({ length: this.runs }, (_, i) => path.join(this.dir, runFileName(i)));
    let merges = 0;
    while (files.length > MERGE_FAN_IN) {
      const next: string[] = [];
      for (let i = 0; i < files.length; i += MERGE_FAN_IN) {
        const group = files.slice(i, i + MERGE_FAN_IN);
        if (group.length === 1) {
          next.push(group[0] as string);
          continue;
        }
        const file = path.join(this.dir, `merge-${String(merges++).padStart(6, '0')}.bin`);
        writeRun(file, mergeRuns(group));
        for (const g of group) if (path.basename(g).startsWith('merge-')) fs.rmSync(g, { force: true });
        next.push(file);
      }
      files = next;
    }
    yield* mergeRuns(files);
  }
}

/** Merges sorted run files with a heap, reading each through a small window. */
function* mergeRuns(files: readonly string[]): Generator<IndexEntry> {
  const readers = files.map((f) => new RunReader(f));
  const heap = new EntryHeap();
  try {
    for (const r of readers) {
      const first = r.next();
      if (first) heap.push(first, r);
    }
    while (heap.size > 0) {
      const { entry, reader } = heap.pop();
      yield entry;
      const next = reader.next();
      if (next) heap.push(next, reader);
    }
  } finally {
    for (const r of readers) r.close();
  }
}

/** Reads one run file's records through a sliding window. */
class RunReader {
  private readonly fd: number;
  private window = new Uint8Array(0);
  private pos = 0;
  private fileOffset = 0;
  private eof = false;

  constructor(private readonly file: string) {
    this.fd = fsCall('open', file, () => fs.openSync(file, 'r'));
  }

  private fill(): void {
    const rest = this.window.subarray(this.pos);
    const chunk = Buffer.allocUnsafe(READ_WINDOW_BYTES);
    const n = fsCall('read', this.file, () => fs.readSync(this.fd, chunk, 0, chunk.length, this.fileOffset));
    this.fileOffset += n;
    if (n === 0) this.eof = true;
    const next = new Uint8Array(rest.length + n);
    next.set(rest, 0);
    next.set(chunk.subarray(0, n), rest.length);
    this.window = next;
    this.pos = 0;
  }

  next(): IndexEntry | undefined {
    // a record is at most MAX_PAGE_SIZE + a varint: refill until one whole record is in the window
    while (!this.eof && this.window.length - this.pos < MAX_PAGE_SIZE + 8) this.fill();
    if (this.pos >= this.window.length) return undefined;
    const r = new ByteReader(this.window, ErrorCodes.CORRUPT_INDEX, `${this.file}`, this.pos);
    const length = r.varint();
    const record = new ByteReader(this.window, ErrorCodes.CORRUPT_INDEX, `${this.file}`, r.pos, r.pos + length);
    const entry = decodeLeafRecord(record, { prevKey: new Uint8Array(0), prev: undefined }, 0);
    this.pos = r.pos + length;
    return entry;
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

/** Binary min-heap of the current head entry of each run. */
class EntryHeap {
  private readonly items: { entry: IndexEntry; reader: RunReader }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(entry: IndexEntry, reader: RunReader): void {
    const items = this.items;
    items.push({ entry, reader });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (compareKeys((items[parent] as { entry: IndexEntry }).entry.key, entry.key) <= 0) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): { entry: IndexEntry; reader: RunReader } {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && compareKeys(items[l]!.entry.key, items[m]!.entry.key) < 0) m = l;
        if (r < items.length && compareKeys(items[r]!.entry.key, items[m]!.entry.key) < 0) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}
