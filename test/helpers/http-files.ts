/** The files the HttpSource tests serve (over nginx or a flaky server), and their error assertion. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { ShardkitError } from '../../formats/errors.js';

export const SHARD_BYTES = 1_000_003;

/**
 * Registers the suite's beforeAll/afterAll: a temporary root with `shard.bin` (random bytes), `empty.bin`,
 * `manifest.json` and `part-0.bin` .. `part-7.bin`. Read `root` and `shard` inside tests (set once beforeAll ran).
 */
export function httpFiles(): { readonly root: string; readonly shard: Buffer } {
  const files = { root: '', shard: Buffer.alloc(0) };
  beforeAll(() => {
    files.root = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-http-'));
    files.shard = randomBytes(SHARD_BYTES);
    fs.writeFileSync(path.join(files.root, 'shard.bin'), files.shard);
    fs.writeFileSync(path.join(files.root, 'empty.bin'), '');
    fs.writeFileSync(path.join(files.root, 'manifest.json'), '{"version":1}');
    for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(files.root, `part-${i}.bin`), Buffer.alloc(1000, i));
  });
  afterAll(() => {
    fs.rmSync(files.root, { recursive: true, force: true });
  });
  return files;
}

/** Awaits `promise`, which must reject with a ShardkitError of `code`, and returns that error. */
export async function rejection(promise: Promise<unknown>, code: string): Promise<ShardkitError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ShardkitError);
  expect((err as ShardkitError).code, (err as Error).message).toBe(code);
  return err as ShardkitError;
}
