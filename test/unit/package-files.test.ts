/**
 * What `npm install shardkit` gets: the package must carry every source the addon's build compiles (a missing one
 * fails node-gyp, and the install then falls back to the JavaScript paths for everything), and binding.gyp must
 * compile every C file there is.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const nativeDir = path.join(root, 'src/native');

/** binding.gyp's main target's sources (the file is JSON with # comments). */
function gypSources(): string[] {
  const text = fs.readFileSync(path.join(nativeDir, 'binding.gyp'), 'utf8');
  const list = /"sources":\s*\[([^\]]*)\]/.exec(text)?.[1] ?? '';
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
}

describe('the package and the addon build', () => {
  it('binding.gyp compiles every C file in src/native', () => {
    const cFiles = fs.readdirSync(nativeDir).filter((f) => f.endsWith('.c'));
    expect(gypSources().sort()).toEqual(cFiles.sort());
  });

  it('npm pack carries every source and header the build reads, binding.gyp and the build script', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const packed = new Set((JSON.parse(out) as [{ files: { path: string }[] }])[0].files.map((f) => f.path));
    const headers = fs.readdirSync(nativeDir).filter((f) => f.endsWith('.h'));
    const wanted = [...gypSources(), ...headers, 'binding.gyp', 'build-addon.mjs'].map((f) => `src/native/${f}`);
    expect(wanted.filter((f) => !packed.has(f))).toEqual([]);
  });
});
