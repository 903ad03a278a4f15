/**
 * Where shard and index bytes come from: a local file or an http(s) URL. Every read is positional; a source never
 * keeps a cursor, so many reads can be in flight at once.
 */
export interface ByteSource {
  /** A name for messages: the file path or URL. */
  readonly name: string;
  /** Total size in bytes (known after open). */
  size(): Promise<number>;
  /**
   * Reads exactly `length` bytes at `offset`; fails with SHARDKIT_ERR_TRUNCATED if the source is shorter. With
   * `into` (at least `length` bytes), a source may read into it and return a view of it instead of new memory (a
   * local file does): for callers that reuse their buffers. Either way, the bytes are the ones returned.
   */
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** A local source also reads synchronously: the fast path for `getSync`/`atSync`. */
export interface SyncByteSource extends ByteSource {
  sizeSync(): number;
  readSync(offset: number, length: number): Uint8Array;
}
