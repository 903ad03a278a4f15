/**
 * The Python reader (formats/python) and its pytest suite: unit and hypothesis tests of its codecs, datasets written
 * by this package's DatasetWriter read byte for byte the same, every damaged dataset answering as the Node reader
 * does, and remote reads through a real nginx. Run with Debian's interpreter, which has the packages the suite uses
 * (python3-pytest, python3-hypothesis, python3-crc32c, python3-lz4): the `python3` first on PATH may be another.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PYTHON = process.env.SHARDKIT_PYTHON ?? '/usr/bin/python3';
const skip = fs.existsSync(PYTHON) || process.env.CI ? undefined : `${PYTHON} not found (apt-get install python3 python3-pytest)`;

describe.skipIf(skip !== undefined)('Python reader (formats/python)', () => {
  it('passes its pytest suite', () => {
    const r = spawnSync(PYTHON, ['-m', 'pytest', 'formats/python/tests', '-q', '-p', 'no:cacheprovider'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', SHARDKIT_NODE: process.execPath },
      timeout: 900_000,
      maxBuffer: 64 << 20,
    });
    expect(r.error).toBeUndefined();
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/\d+ passed/);
    expect(r.stdout).not.toMatch(/skipped/);
    // PYTHONDONTWRITEBYTECODE, no cache provider and no hypothesis database: the suite writes into temp dirs only
  }, 900_000);
});
