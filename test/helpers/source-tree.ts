/** Builds source trees of small files in a temp directory for walk and pack tests. */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tmpDir } from './tmp.js';

/** A fresh empty temp directory, removed when the test file finishes (see tmpDir), or earlier by {@link removeTree}. */
export async function makeTempDir(prefix = 'shardkit-test-'): Promise<string> {
  return tmpDir(prefix);
}

/** Writes `files` (relative path -> content) under `root`, creating directories. */
export async function writeTree(root: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [relPath, content] of Object.entries(files)) {
    const abs = join(root, relPath);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, content);
  }
}

export async function removeTree(root: string): Promise<void> {
  await rm(root, { recursive: true, force: true });
}

/** Collects an async iterable into an array. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
