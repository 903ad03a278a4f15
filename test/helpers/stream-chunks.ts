/**
 * A chunk of a tar-stream stream as the Buffer it is. tar-stream's typings (streamx) type every chunk `unknown`;
 * it emits Buffers, and a test that gets anything else should fail here rather than join the wrong bytes.
 */
export function bufferChunk(chunk: unknown): Buffer {
  if (!Buffer.isBuffer(chunk)) throw new TypeError(`expected a Buffer chunk from tar-stream, got ${Object.prototype.toString.call(chunk)}`);
  return chunk;
}
