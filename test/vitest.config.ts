import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * verify's damage tests run twice: with the native addon's per-sample loop (src/native/verify-scan.c) and with the
 * JavaScript one it replaces (SHARDKIT_NATIVE=0), which must name the same samples with the same messages.
 */
const VERIFY_TESTS = ['test/unit/verify-dataset.test.ts', 'test/unit/verify-tar-names.test.ts', 'test/unit/verify-stream.test.ts', 'test/unit/index-damage.test.ts', 'test/unit/big-members.test.ts', 'test/unit/adopt-tars.test.ts'];

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: modest file-level parallelism keeps e2e and child-process tests stable.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'verify without the addon', include: VERIFY_TESTS, env: { SHARDKIT_NATIVE: '0' } } },
    ],
  },
});
