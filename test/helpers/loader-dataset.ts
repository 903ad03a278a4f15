/** Small datasets for the loader tests: deterministic member bytes of varied sizes, written with DatasetWriter. */
import type { Sample } from '../../formats/sample.js';
import { DatasetWriter, type DatasetWriterOptions } from '../../src/pack/dataset-writer.js';

/** Sample i: a `bin` member of `size(i)` bytes that depend on i, and a `cls` member. */
export function loaderSample(i: number, size = 50 + ((i * 7919) % 3000)): Sample {
  const bin = new Uint8Array(size);
  for (let j = 0; j < size; j++) bin[j] = (i * 131 + j * 7) & 0xff;
  return { key: `s/${String(i).padStart(6, '0')}`, members: { bin, cls: new TextEncoder().encode(String(i % 10)) } };
}

/** Writes `n` samples (several shards at the default 32 KiB shard budget) and returns the dataset directory. */
export async function writeLoaderDataset(dir: string, n: number, options: Partial<DatasetWriterOptions> = {}): Promise<string> {
  const writer = new DatasetWriter({ dir, shardBytes: 32 * 1024, ...options });
  for (let i = 0; i < n; i++) writer.add(loaderSample(i));
  await writer.finish();
  return dir;
}

/** Buffer equality of two byte arrays (views allowed). */
export function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  return a !== undefined && b !== undefined && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
