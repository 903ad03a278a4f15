#!/usr/bin/env node
/**
 * Bundles the compiled command line (run by `npm run build`, after tsc) into dist/bin: `shardkit.js` (the command
 * line, which the `bin`, `shardkit.cjs` copied from cli/launcher.cjs, loads),
 * `source-worker.js` (pack's reader threads) and `epoch-child.js` (the benchmark's child processes), with the code
 * they share in chunks. Node 20 loads ES modules one by one (resolve, read, compile, link): the ~70 modules of a
 * pack took ~0.1 s before the first file was read; the bundle loads a pack from 28 files. Commands stay
 * lazy (each one is a chunk of its own). Dependencies stay in node_modules, but for the small pure-JavaScript ones
 * on the start-up path (BUNDLED: commander for every command, picomatch for pack's walk): commander alone took
 * 26-44 ms to import through Node's CommonJS loader, and a one-file pack took 0.87x the time with them in the bundle
 * (median of 15 alternated pairs). The library (`import 'shardkit'`) is tsc's output in dist/src, not this.
 *
 * The worker and the child keep their names because the code that starts them finds them next to itself
 * (`new URL('./source-worker.js', import.meta.url)`), and both resolve to dist/bin in the bundle.
 */
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const out = path.join(dist, 'bin');

const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
/** Small pure-JavaScript packages on the start-up path: bundled (every other dependency stays external). */
const BUNDLED = new Set(['commander', 'picomatch']);
const EXTERNAL = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies, ...manifest.optionalDependencies, ...manifest.peerDependencies }).filter(
  (name) => !BUNDLED.has(name),
);

// chunks are named by content hash: an old build's would stay behind
fs.rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: {
    shardkit: path.join(dist, 'cli/main.js'),
    'source-worker': path.join(dist, 'src/pack/source-worker.js'),
    'epoch-child': path.join(dist, 'src/bench/epoch-child.js'),
  },
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  // the bundled CommonJS packages require Node's built-ins: an ES module has no `require` of its own
  banner: { js: "import { createRequire as __shardkitRequire } from 'node:module'; const require = __shardkitRequire(import.meta.url);" },
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
});
// the bin: a CommonJS launcher that sizes libuv's pool before the bundle loads (see cli/launcher.cjs)
fs.copyFileSync(path.join(root, 'cli', 'launcher.cjs'), path.join(out, 'shardkit.cjs'));
fs.chmodSync(path.join(out, 'shardkit.cjs'), 0o755);
// the bundled packages' licences travel with their code
const notices = [...BUNDLED].map((name) => {
  const dir = path.join(root, 'node_modules', name);
  const licence = fs.readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  if (licence === undefined) throw new Error(`${name} has no licence file to ship with the bundle`);
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  return `${name} ${version}\n\n${fs.readFileSync(path.join(dir, licence), 'utf8').trim()}\n`;
});
fs.writeFileSync(path.join(out, 'THIRD-PARTY-LICENSES.txt'), `Packages bundled into these files:\n\n${notices.join('\n---\n\n')}`);
