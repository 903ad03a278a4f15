import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

/** A fresh temporary directory, removed when the test file finishes. */
export function tmpDir(prefix = 'shardkit-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** The directories tmpDir made that the test file's afterAll will remove (for the helper's own test). */
export function pendingTmpDirs(): readonly string[] {
  return made;
}

afterAll(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
