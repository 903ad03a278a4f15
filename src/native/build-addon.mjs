#!/usr/bin/env node
/**
 * Builds the optional native addon (src/native/shardkit.c -> src/native/build/Release/shardkit.node) with the
 * node-gyp that npm ships, for `npm install`, `npm ci` and `npm run build`. It never fails the caller: without a
 * compiler, headers or node-gyp it prints one line and exits 0, and shardkit reads with pread instead.
 *
 *   node src/native/build-addon.mjs [--force]
 *
 * Skips the build when the addon is newer than its sources (a plain `npm run build` stays fast), or when
 * SHARDKIT_NATIVE=0 is set.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const addon = path.join(here, 'build', 'Release', 'shardkit.node');
// every C source and header here, and the build file: an addon older than any of them is built again
const sources = fs.readdirSync(here).filter((f) => /\.[ch]$/.test(f) || f === 'binding.gyp').map((f) => path.join(here, f));
const force = process.argv.includes('--force');

function say(line) {
  process.stderr.write(`shardkit native addon: ${line}\n`);
}

function upToDate() {
  try {
    const built = fs.statSync(addon).mtimeMs;
    return sources.every((s) => fs.statSync(s).mtimeMs <= built);
  } catch {
    return false;
  }
}

/** npm sets npm_config_node_gyp for lifecycle scripts and puts node-gyp on PATH; outside npm try npm's own copy. */
function nodeGypCommand() {
  const fromNpm = process.env.npm_config_node_gyp;
  if (fromNpm && fs.existsSync(fromNpm)) return [process.execPath, [fromNpm]];
  const npmDir = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (fs.existsSync(npmDir)) return [process.execPath, [npmDir]];
  return ['node-gyp', []];
}

function main() {
  const v = process.env.SHARDKIT_NATIVE;
  if (v === '0' || v === 'false' || v === 'off') return say('skipped (SHARDKIT_NATIVE=0); shardkit will use pread');
  if (process.platform === 'win32') return say('not built on Windows; shardkit will use pread');
  if (!force && upToDate()) return;
  const [cmd, pre] = nodeGypCommand();
  // Headers next to this node (distribution tarballs and most packages ship them): no download needed.
  const prefix = path.join(path.dirname(process.execPath), '..');
  const localHeaders = !process.env.npm_config_nodedir && fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'));
  const args = [...pre, 'rebuild', '--directory', here, ...(localHeaders ? [`--nodedir=${path.resolve(prefix)}`] : [])];
  const res = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (res.status === 0 && fs.existsSync(addon)) return say('built');
  const why = res.error ? res.error.message : (res.stderr || res.stdout || '').trim().split('\n').filter((l) => /error/i.test(l)).slice(-3).join(' | ');
  say(`build failed (${why || `exit ${res.status}`}); shardkit will use pread. Rebuild with \`npm run build:native\`.`);
  fs.rmSync(path.join(here, 'build'), { recursive: true, force: true }); // no half-built addon left to load
}

main();
