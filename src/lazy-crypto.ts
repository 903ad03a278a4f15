/**
 * node:crypto, loaded on first use. Loading it took ~3.5 ms of CPU in a fresh process (about a fifth of what
 * `import 'shardkit/read'` took, bench/startup.mjs), and a process that only reads never hashes: the cache
 * directory's dataset id, pack's input proof and temporary file names ask for it when they run.
 */
import { createRequire } from 'node:module';

let loaded: typeof import('node:crypto') | undefined;

export function nodeCrypto(): typeof import('node:crypto') {
  return (loaded ??= createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto'));
}
