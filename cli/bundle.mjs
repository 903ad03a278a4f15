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
 * (median of 15 alternated pairs).
 *
 * The library is bundled too, into dist/lib: `index.js` (what `import 'shardkit'` loads, package.json's exports),
 * `read.js` (`shardkit/read`, the reading API alone: what it loads is about half of what index.js loads) and
 * `formats.js` (`shardkit/formats`), which share their chunks (one ShardkitError class for all three). Importing the
 * reader from tsc's ~65 modules took 1.7x `node -e 0`, from a bundle 1.3x (bench/startup.mjs). The types stay
 * tsc's (dist/src/index.d.ts).
 *
 * The worker and the child keep their names because the code that starts them finds them next to itself
 * (`new URL('./source-worker.js', import.meta.url)`), and both resolve to the bundle's own directory (dist/bin, dist/lib).
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

/**
 * One esbuild run: `entries` into `dir`, with the code they share in chunks (or, `splitting` false, each entry a
 * file of its own). Chunks are named by content hash: an old build's would stay behind, so `fresh` empties the
 * directory first.
 */
async function bundle(dir, entries, { splitting = true, fresh = true, plugins = [] } = {}) {
  if (fresh) fs.rmSync(dir, { recursive: true, force: true });
  await build({
    plugins,
    entryPoints: entries,
    outdir: dir,
    bundle: true,
    splitting,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    // the bundled CommonJS packages require Node's built-ins: an ES module has no `require` of its own
    banner: { js: "import { createRequire as __shardkitRequire } from 'node:module'; const require = __shardkitRequire(import.meta.url);" },
    chunkNames: 'chunk-[hash]',
    logLevel: 'warning',
  });
}

// the worker and the child are found next to the code that starts them: each bundle has its own
const threads = {
  'source-worker': path.join(dist, 'src/pack/source-worker.js'),
  'epoch-child': path.join(dist, 'src/bench/epoch-child.js'),
};
await bundle(out, { shardkit: path.join(dist, 'cli/main.js'), ...threads });
// The library apart: in one build with the command line, its entries split the command line's chunks finer (a pack
// loaded 72 files instead of 55). Its worker and child are one file each (they share no object with the library:
// they talk through messages and pipes), so that they do not split the library's chunks either.
const lib = path.join(dist, 'lib');
const readApi = path.join(dist, 'src/read-api.js');
const mainApi = path.join(dist, 'src/index.js');

/**
 * esbuild puts each module in the chunk of the set of entries that reach it, dynamic imports included: as each
 * on-demand operation (pack, verify, ...) reaches a different part of the library, its modules were spread over 30
 * chunks (13 for the reader), and Node 20 pays ~0.8 ms a file to load an ES module (resolve, read, compile, link).
 * This plugin makes every module the library loads on demand import the main entry first (loaded already: only the
 * main entry loads them), so that every module an entry imports is reached by the same entries and lands in one
 * chunk or a few. `import 'shardkit'` then loads 5 files instead of 30 (24-28 ms of CPU instead of 42-47, medians of
 * 6 alternated fresh processes), `shardkit/read` 3 instead of 13 (16-19 ms instead of 25-28).
 */
const mainFirst = {
  name: 'main-first',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\//, namespace: 'file' }, (args) => (args.kind === 'dynamic-import' ? { path: path.join(args.resolveDir, args.path), namespace: 'main-first' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'main-first' }, (args) => ({
      contents: `import ${JSON.stringify(mainApi)};\nexport * from ${JSON.stringify(args.path)};\n`,
      resolveDir: path.dirname(args.path),
      loader: 'js',
    }));
  },
};
await bundle(lib, { index: path.join(dist, 'src/index.js'), read: readApi, formats: path.join(dist, 'formats/index.js') }, { plugins: [mainFirst] });
await bundle(lib, threads, { splitting: false, fresh: false });
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
for (const dir of [out, path.join(dist, 'lib')]) fs.writeFileSync(path.join(dir, 'THIRD-PARTY-LICENSES.txt'), `Packages bundled into these files:\n\n${notices.join('\n---\n\n')}`);
