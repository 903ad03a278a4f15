/**
 * A push parser over tar bytes: feed it the archive in chunks of any size (one sequential read), it reports each
 * entry once its headers are complete, then that entry's data in pieces. Pure: no I/O, bounded memory (one header
 * block plus at most MAX_TAR_META_BYTES of pax / GNU long-name data), so a hostile archive can neither make it
 * allocate without bound nor loop: every byte fed moves it forward.
 *
 * Understands ustar, GNU and v7 headers; pax 'x' records (`path`, `linkpath`, `size`) for the next entry; pax 'g'
 * global headers (parsed, then ignored); GNU 'L' / 'K' long names; base-256 sizes. Entry types whose data tar
 * readers do not skip (links, devices, directories, fifos: Python's tarfile reads their size as 0) carry no data.
 * Rules for what becomes a sample live with the callers (SPEC "Adopting foreign tars").
 */
import { utf8OrUndefined } from './bytes.js';
import { ErrorCodes, ShardkitError } from './errors.js';
import { TAR_BLOCK, TarType, decodeTarHeader, tarPadding } from './tar-header.js';

/** Largest pax or GNU long-name record set accepted for one entry: real ones are a few hundred bytes. */
export const MAX_TAR_META_BYTES = 1 << 20;

export interface TarEntry {
  /** Offset of the entry's first header block (its pax or long-name header when it has one). */
  headerOffset: number;
  /** Offset of the entry's data (just after its ustar header block). */
  dataOffset: number;
  /** Data bytes that follow in the archive (0 for links, directories, devices, fifos). */
  size: number;
  /** Typeflag character ('0' file, '2' symlink, ...). */
  type: string;
  /** Name bytes after pax `path` / GNU 'L' were applied. */
  nameBytes: Uint8Array;
  /** The name as UTF-8, or undefined when the bytes are not valid UTF-8. */
  name: string | undefined;
  linkname: string;
  /**
   * A GNU sparse file (type 'S', or pax `GNU.sparse.*` records): its data is the stored fragments (and, in format
   * 1.0, a map before them), not the file's bytes.
   */
  sparse: boolean;
}

export interface TarScanHandler {
  /** An entry's headers are complete; its data (if any) follows through `onData`. */
  onEntry(entry: TarEntry): void;
  /** A piece of the current entry's data (a view into the fed chunk: copy it to keep it). */
  onData?(entry: TarEntry, piece: Uint8Array, offsetInEntry: number): void;
  /** The entry's data is complete. */
  onEntryEnd?(entry: TarEntry): void;
}

/** Types whose size field tar readers ignore: no data follows their header. */
const NO_DATA_TYPES = new Set<string>([TarType.hardLink, TarType.symlink, TarType.charDevice, TarType.blockDevice, TarType.directory, TarType.fifo]);
const META_TYPES = new Set<string>([TarType.paxExtended, TarType.paxGlobal, TarType.gnuLongName, TarType.gnuLongLink]);

type State = 'header' | 'sparseMap' | 'meta' | 'data' | 'padding' | 'end';

interface Pending {
  path?: Uint8Array;
  linkpath?: string;
  size?: number;
  sparse?: boolean;
}

/** No pax or long-name records for the next entry (shared, and frozen: onMetaComplete makes a new one to fill). */
const NO_PENDING: Pending = Object.freeze({});

/** Old GNU sparse headers: the byte that says the sparse map continues in another block, in the header and in each such block. */
const SPARSE_EXTENDED_IN_HEADER = 482;
const SPARSE_EXTENDED_IN_BLOCK = 504;

export class TarScanner {
  private state: State = 'header';
  /** Absolute offset of the next byte to be fed. */
  private pos: number;
  private readonly block = new Uint8Array(TAR_BLOCK);
  private blockFill = 0;
  private metaType = '';
  private meta: Uint8Array = new Uint8Array(0);
  private metaFill = 0;
  private metaPadding = 0;
  private pending: Pending = NO_PENDING;
  private entryHeaderOffset = -1;
  private current: TarEntry | undefined;
  private remaining = 0;
  private padding = 0;
  /** A 'S' header whose sparse map continues in extension blocks: the entry starts after them. */
  private sparseHeader: NonNullable<ReturnType<typeof decodeTarHeader>> | undefined;

  /** `where` names the archive in errors; `startOffset` is the absolute offset of the first byte fed. */
  constructor(
    private readonly where: string,
    private readonly handler: TarScanHandler,
    startOffset = 0,
  ) {
    this.pos = startOffset;
  }

  /** True once the end-of-archive zero block was read; later bytes are ignored. */
  get ended(): boolean {
    return this.state === 'end';
  }

  /** Offset of the next byte the scanner expects. */
  get offset(): number {
    return this.pos;
  }

  /**
   * True at a header boundary with nothing pending: no header block begun, no pax or long-name records waiting for
   * their entry. A caller may then read plain headers itself and tell the scanner with {@link passHeaders}.
   */
  get atHeader(): boolean {
    const p = this.pending;
    return this.state === 'header' && this.blockFill === 0 && this.entryHeaderOffset < 0 && p.path === undefined && p.size === undefined && p.linkpath === undefined && p.sparse === undefined;
  }

  push(chunk: Uint8Array): void {
    this.feed(chunk, 0, false);
  }

  /**
   * Scans chunk[from...] (the bytes after those fed before) until it is {@link atHeader} again after at least one
   * byte, or the chunk ends; returns where it stopped.
   */
  pushUntilHeader(chunk: Uint8Array, from: number): number {
    return this.feed(chunk, from, true);
  }

  /**
   * The caller read `bytes` bytes from a header boundary ({@link atHeader}): whole plain headers of regular files and
   * their data, which it reports itself (onEntry is not called for them). The next header starts at `nextHeader`
   * (the scanner skips the data before it that is still to come).
   */
  passHeaders(bytes: number, nextHeader: number): void {
    if (!this.atHeader || bytes < 0 || nextHeader < this.pos + bytes) throw new RangeError('TarScanner.passHeaders: not at a header, or the next header is behind');
    this.pos += bytes;
    if (nextHeader > this.pos) {
      this.padding = nextHeader - this.pos;
      this.state = 'padding';
    }
  }

  private feed(chunk: Uint8Array, from: number, untilHeader: boolean): number {
    let i = from;
    while (i < chunk.length && this.state !== 'end') {
      if (untilHeader && i > from && this.atHeader) return i;
      const rest = chunk.length - i;
      switch (this.state) {
        case 'header':
        case 'sparseMap': {
          const take = Math.min(TAR_BLOCK - this.blockFill, rest);
          this.block.set(chunk.subarray(i, i + take), this.blockFill);
          this.blockFill += take;
          i += take;
          this.pos += take;
          if (this.blockFill === TAR_BLOCK) {
            this.blockFill = 0;
            if (this.state === 'header') this.onHeaderBlock();
            else this.onSparseMapBlock();
          }
          break;
        }
        case 'meta': {
          if (this.metaFill < this.meta.length) {
            const take = Math.min(this.meta.length - this.metaFill, rest);
            this.meta.set(chunk.subarray(i, i + take), this.metaFill);
            this.metaFill += take;
            i += take;
            this.pos += take;
          } else {
            const take = Math.min(this.metaPadding, rest);
            this.metaPadding -= take;
            i += take;
            this.pos += take;
          }
          if (this.metaFill === this.meta.length && this.metaPadding === 0) this.onMetaComplete();
          break;
        }
        case 'data': {
          const entry = this.current as TarEntry;
          const take = Math.min(this.remaining, rest);
          this.handler.onData?.(entry, chunk.subarray(i, i + take), entry.size - this.remaining);
          this.remaining -= take;
          i += take;
          this.pos += take;
          if (this.remaining === 0) this.finishData();
          break;
        }
        case 'padding': {
          const take = Math.min(this.padding, rest);
          this.padding -= take;
          i += take;
          this.pos += take;
          if (this.padding === 0) this.state = 'header';
          break;
        }
        default:
          break;
      }
    }
    return i;
  }

  /**
   * The archive's bytes are all fed. Ending on a header boundary without the zero blocks is accepted (Python's
   * tarfile does too); ending inside a header or an entry's data is TRUNCATED.
   */
  finish(): void {
    if (this.state === 'end') return;
    if (this.state === 'header' && this.blockFill === 0 && this.entryHeaderOffset < 0) return;
    throw new ShardkitError(ErrorCodes.TRUNCATED, `${this.where}: archive ends inside an entry (at byte ${this.pos})`, { file: this.where, offset: this.pos });
  }

  private fail(why: string, offset: number): never {
    throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${this.where}: ${why} (header at byte ${offset})`, { file: this.where, offset });
  }

  private onHeaderBlock(): void {
    const headerOffset = this.pos - TAR_BLOCK;
    const h = decodeTarHeader(this.block, this.where, headerOffset);
    if (h === undefined) {
      if (this.entryHeaderOffset >= 0) this.fail('archive ends after a pax or long-name header without its entry', this.entryHeaderOffset);
      this.state = 'end';
      return;
    }
    if (this.entryHeaderOffset < 0) this.entryHeaderOffset = headerOffset;
    if (META_TYPES.has(h.type)) {
      if (h.size > MAX_TAR_META_BYTES) this.fail(`'${h.type}' header holds ${h.size} bytes, over the ${MAX_TAR_META_BYTES}-byte limit`, headerOffset);
      this.metaType = h.type;
      this.meta = new Uint8Array(h.size);
      this.metaFill = 0;
      this.metaPadding = tarPadding(h.size);
      this.state = 'meta';
      if (h.size === 0) this.onMetaComplete();
      return;
    }
    if (h.type === TarType.gnuSparse && this.block[SPARSE_EXTENDED_IN_HEADER] !== 0) {
      this.sparseHeader = h;
      this.state = 'sparseMap';
      return;
    }
    this.startEntry(h);
  }

  /** One extension block of an old GNU sparse header's map; the last one says so, and the entry's data follows. */
  private onSparseMapBlock(): void {
    if (this.block[SPARSE_EXTENDED_IN_BLOCK] !== 0) return;
    const h = this.sparseHeader as NonNullable<typeof this.sparseHeader>;
    this.sparseHeader = undefined;
    this.state = 'header';
    this.startEntry(h);
  }

  private startEntry(h: NonNullable<ReturnType<typeof decodeTarHeader>>): void {
    const p = this.pending;
    const size = NO_DATA_TYPES.has(h.type) ? 0 : (p.size ?? h.size);
    const entry: TarEntry = {
      headerOffset: this.entryHeaderOffset,
      dataOffset: this.pos,
      size,
      type: h.type,
      nameBytes: p.path ?? h.nameBytes,
      name: undefined,
      linkname: p.linkpath ?? h.linkname,
      sparse: h.type === TarType.gnuSparse || p.sparse === true,
    };
    // the header's own name was decoded with it; a pax `path` or GNU long name is decoded here
    entry.name = p.path === undefined ? (h.nameIsUtf8 ? h.name : undefined) : utf8OrUndefined(p.path);
    if (p !== NO_PENDING) this.pending = NO_PENDING;
    this.entryHeaderOffset = -1;
    this.current = entry;
    this.handler.onEntry(entry);
    this.remaining = size;
    if (size === 0) this.finishData();
    else this.state = 'data';
  }

  private finishData(): void {
    const entry = this.current as TarEntry;
    this.handler.onEntryEnd?.(entry);
    this.current = undefined;
    this.padding = tarPadding(entry.size);
    this.state = this.padding === 0 ? 'header' : 'padding';
  }

  private onMetaComplete(): void {
    if (this.pending === NO_PENDING) this.pending = {};
    const data = this.meta;
    const at = this.entryHeaderOffset;
    this.meta = new Uint8Array(0);
    this.state = 'header';
    switch (this.metaType) {
      case TarType.gnuLongName:
        this.pending.path = trimNul(data).slice();
        break;
      case TarType.gnuLongLink:
        this.pending.linkpath = utf8OrUndefined(trimNul(data)) ?? new TextDecoder('latin1').decode(trimNul(data));
        break;
      case TarType.paxExtended:
        for (const [key, value] of paxRecords(data, () => this.fail('malformed pax record', at))) {
          if (key === 'path') this.pending.path = value.slice();
          else if (key === 'linkpath') this.pending.linkpath = utf8OrUndefined(value) ?? new TextDecoder('latin1').decode(value);
          else if (key === 'size') {
            const text = utf8OrUndefined(value) ?? '';
            const n = Number(text);
            if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) this.fail(`pax size ${JSON.stringify(text.slice(0, 40))} is not a byte count`, at);
            this.pending.size = n;
          } else if (key.startsWith('GNU.sparse.')) this.pending.sparse = true;
        }
        break;
      default:
        // 'g': global records (comments, charset, mtime) change nothing a sample needs; parsed only to reject
        // malformed ones, and not attached to any entry.
        for (const _ of paxRecords(data, () => this.fail('malformed pax global record', at))) void _;
        this.entryHeaderOffset = -1;
    }
  }
}

/** Pax records "<len> <key>=<value>\n" as raw value bytes (names may be binary with hdrcharset=BINARY). */
export function* paxRecords(data: Uint8Array, fail: () => never): Generator<[string, Uint8Array]> {
  let pos = 0;
  while (pos < data.length) {
    if (data[pos] === 0) return; // NUL padding some writers leave
    let sp = pos;
    let len = 0;
    while (sp < data.length && sp - pos < 12 && (data[sp] as number) >= 0x30 && (data[sp] as number) <= 0x39) len = len * 10 + ((data[sp++] as number) - 0x30);
    if (sp === pos || data[sp] !== 0x20 || len <= sp - pos + 1 || pos + len > data.length || data[pos + len - 1] !== 0x0a) fail();
    const record = data.subarray(sp + 1, pos + len - 1);
    const eq = record.indexOf(0x3d);
    if (eq <= 0) fail();
    yield [new TextDecoder('latin1').decode(record.subarray(0, eq)), record.subarray(eq + 1)];
    pos += len;
  }
}

function trimNul(bytes: Uint8Array): Uint8Array {
  const nul = bytes.indexOf(0);
  return nul < 0 ? bytes : bytes.subarray(0, nul);
}
