/**
 * Reads into a buffer verify keeps for the whole pass, when the source can (a local file): a fresh buffer for every
 * chunk costs a page fault per 4 KiB written (about 6x the CPU time of the copy out of the page cache itself).
 */
import type { ByteSource } from '../io/byte-source.js';

interface ReadsInto {
  readInto(buffer: Uint8Array, bufferOffset: number, length: number, position: number): Promise<void>;
}

/** `length` bytes at `offset` of `source`: a view of `buffer` (valid until its next use), or new bytes. */
export async function readReusing(source: ByteSource, buffer: Uint8Array, offset: number, length: number): Promise<Uint8Array> {
  const into = (source as Partial<ReadsInto>).readInto;
  if (typeof into !== 'function' || length > buffer.length) return source.read(offset, length);
  await into.call(source, buffer, 0, length, offset);
  return buffer.subarray(0, length);
}
