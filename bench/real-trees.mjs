/**
 * Real file trees for the benchmarks: a Linux distribution's own data (icon themes, game data, package docs), copied
 * into a bench directory so that every run reads the same files.
 *
 *   tree A: ~5,000 files, mixed PNG, SVG, JPEG, OGG, WAV and text, 100 B - 1 MiB, from /usr/share/icons,
 *           /usr/share/games/neverball, /usr/share/games/pingus and /usr/share/doc (Debian packages
 *           adwaita-icon-theme, neverball-data, pingus-data; installed with apt-get when absent and we are root).
 *   tree B: ~3,000 small PNGs (100 B - 16 KiB) from /usr/share/icons.
 *
 * Selection is deterministic: a sorted walk of each source root (regular files only, no symlinks), filtered by
 * extension and size, concatenated in root order; then N files taken at an even stride over that list (so every
 * root and file type is represented, not only the first directory). The copy keeps relative paths under a
 * directory named after the root. `fingerprint` (a hash of the sorted paths and sizes) tells whether two runs, or two
 * machines, read the same tree; a different package version gives a different fingerprint.
 *
 *   node bench/real-trees.mjs A|B [--dir DIR] [--files N]     (prints the tree's directory and facts as JSON)
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIN_BYTES = 100;
const MIB = 1024 * 1024;

/** The two trees: source roots (with the Debian package that provides each), extensions, sizes, file count. */
export const REAL_TREES = {
  A: {
    files: 5000,
    minBytes: MIN_BYTES,
    maxBytes: MIB,
    exts: ['png', 'svg', 'jpg', 'jpeg', 'ogg', 'wav', 'txt', 'md', 'html', 'sol', 'map', 'obj', 'sprite'],
    roots: [
      { dir: '/usr/share/icons', package: 'adwaita-icon-theme' },
      { dir: '/usr/share/games/neverball', package: 'neverball-data' },
      { dir: '/usr/share/games/pingus', package: 'pingus-data' },
      { dir: '/usr/share/doc', package: undefined },
    ],
  },
  B: {
    files: 3000,
    minBytes: MIN_BYTES,
    maxBytes: 16 * 1024,
    exts: ['png'],
    roots: [{ dir: '/usr/share/icons', package: 'adwaita-icon-theme' }],
  },
};

/** Installs the Debian packages a tree's roots come from, when a root is missing (root user only). */
function ensurePackages(spec, log) {
  const missing = spec.roots.filter((r) => r.package !== undefined && !fs.existsSync(r.dir)).map((r) => r.package);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`real tree needs Debian packages ${missing.join(', ')}: run \`apt-get install ${missing.join(' ')}\` as root`);
  log(`installing ${missing.join(', ')} with apt-get\n`);
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/** Regular files under `dir` in sorted order (byte order of names), relative to `dir`, with their sizes. */
function sortedWalk(dir) {
  const out = [];
  const walk = (rel) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
    } catch {
      return; // unreadable directory: not part of the tree
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) out.push({ rel: r, size: fs.statSync(path.join(dir, r)).size });
    }
  };
  walk('');
  return out;
}

/** The files of a tree spec, as `{ src, rel, size }` with `rel` the path in the copy. */
export function selectFiles(spec, files = spec.files) {
  const exts = new Set(spec.exts);
  const candidates = [];
  for (const root of spec.roots) {
    if (!fs.existsSync(root.dir)) continue;
    const name = path.basename(root.dir);
    for (const f of sortedWalk(root.dir)) {
      const base = path.posix.basename(f.rel);
      const dot = base.lastIndexOf('.');
      // the key is the path up to the basename's first dot: skip names whose key would be empty (".hidden")
      if (dot <= 0 || base.indexOf('.') === 0 || !exts.has(base.slice(dot + 1).toLowerCase())) continue;
      if (f.size < spec.minBytes || f.size > spec.maxBytes) continue;
      candidates.push({ src: path.join(root.dir, f.rel), rel: `${name}/${f.rel}`, size: f.size });
    }
  }
  if (candidates.length <= files) return candidates;
  const stride = candidates.length / files;
  return Array.from({ length: files }, (_, i) => candidates[Math.floor(i * stride)]);
}

export function fingerprintOf(selected) {
  const h = createHash('sha256');
  for (const f of selected) h.update(`${f.rel}\0${f.size}\n`);
  return h.digest('hex').slice(0, 16);
}

/**
 * The real tree `name` ('A' or 'B') copied under `dir` (default: os.tmpdir()/shardkit-real-<name>), reused when a
 * previous copy has the same fingerprint. Returns `{ dir, files, bytes, fingerprint, byExt, roots }`.
 */
export function realTree(name, { dir, files, log = (s) => process.stderr.write(s) } = {}) {
  const spec = REAL_TREES[name];
  if (spec === undefined) throw new Error(`unknown real tree ${JSON.stringify(name)}: expected A or B`);
  ensurePackages(spec, log);
  const selected = selectFiles(spec, files ?? spec.files);
  const fingerprint = fingerprintOf(selected);
  const out = dir ?? path.join(os.tmpdir(), `shardkit-real-${name}-${selected.length}`);
  const stamp = path.join(out, '.fingerprint');
  const bytes = selected.reduce((t, f) => t + f.size, 0);
  const byExt = {};
  for (const f of selected) {
    const ext = f.rel.slice(f.rel.lastIndexOf('.') + 1).toLowerCase();
    byExt[ext] = (byExt[ext] ?? 0) + 1;
  }
  const facts = { name, dir: path.join(out, 'tree'), files: selected.length, bytes, fingerprint, byExt, roots: spec.roots.filter((r) => fs.existsSync(r.dir)).map((r) => r.dir) };
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === fingerprint) return facts;
  fs.rmSync(out, { recursive: true, force: true });
  for (const f of selected) {
    const to = path.join(facts.dir, f.rel);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(f.src, to);
  }
  fs.writeFileSync(stamp, fingerprint); // written last: a copy cut short is made again
  log(`real tree ${name}: copied ${selected.length} files, ${(bytes / MIB).toFixed(1)} MiB to ${facts.dir} (fingerprint ${fingerprint})\n`);
  return facts;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const name = args[0];
  const opt = (flag) => {
    const i = args.indexOf(flag);
    return i < 0 ? undefined : args[i + 1];
  };
  const files = opt('--files');
  process.stdout.write(`${JSON.stringify(realTree(name, { dir: opt('--dir'), files: files === undefined ? undefined : Number(files) }), null, 2)}\n`);
}
