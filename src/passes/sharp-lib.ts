/**
 * sharp (libvips), loaded on first use: `import 'shardkit'` to read datasets, or a pack without image passes, does
 * not pay ~150 ms and a libvips load for it.
 */
import { createRequire } from 'node:module';
import type Sharp from 'sharp';

let lib: typeof Sharp | undefined;

export function sharpLib(): typeof Sharp {
  lib ??= createRequire(import.meta.url)('sharp') as typeof Sharp;
  return lib;
}
