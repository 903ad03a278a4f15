#!/usr/bin/env node
/**
 * Pass throughput (issue 28, goal 5): `shardkit pack --pass resize=224x224` images/s against a standalone sharp
 * script that resizes the same images on the same cores, alternated in fresh processes, each timed spawn to exit.
 *
 * Images: --images N (default 600) PNG and JPEG files of real tree A (bench/real-trees.mjs: icons, game textures),
 * taken at an even stride over its sorted list and copied into a bench dir; or the images of --tree DIR.
 * The standalone script (bench/passes-sharp.mjs) does what the pass does to each image, as a user would write it:
 * read the file, `sharp(bytes, { failOn: 'error', autoOrient: true }).resize({ width: 224, height: 224,
 * fit: 'inside' })`, encode in the input's format (JPEG quality 90, PNG defaults), append the output to one file.
 * It runs `--jobs` images at once (default: the cores, what pack runs), with sharp's own defaults for libvips threads
 * and cache ("sharp defaults") and, as a second side, with pack's settings (one libvips thread per image, no cache:
 * "sharp like pack"). Two more sides say what a gap is made of: "sharp like pack + metadata" (the metadata() read
 * the pass makes to keep 16-bit depth and greyness) and "pack, no pass" (pack's own fixed cost). Ratios: standalone time / pack time per alternated run (median, min-max); goal >= 0.9. The
 * same ratios of CPU seconds (all threads, getrusage of the child) say what the work costs when the machine's load
 * leaves each process only a share of the cores.
 *
 *   npm run build && node bench/passes.mjs [--images 600] [--runs 5] [--jobs N] [--tree DIR] [--json FILE]
 *                                          [--pack-env K=V]... (extra environment for the pack side, e.g.
 *                                          UV_THREADPOOL_SIZE=2, to find what bounds it)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { realTree, REAL_TREES, selectFiles } from './real-trees.mjs';

const { values } = parseArgs({ options: { images: { type: 'string', default: '600' }, runs: { type: 'string', default: '5' }, jobs: { type: 'string' }, tree: { type: 'string' }, json: { type: 'string' }, 'pack-env': { type: 'string', multiple: true, default: [] } } });
const N = Number(values.images);
const R = Number(values.runs);
const jobs = Number(values.jobs ?? os.availableParallelism());
const cli = fileURLToPath(new URL('../dist/bin/shardkit.cjs', import.meta.url));
const standalone = fileURLToPath(new URL('./passes-sharp.mjs', import.meta.url));
const work = path.join(os.tmpdir(), `shardkit-bench-passes-${N}`);
const IMAGE = /\.(png|jpe?g)$/i;

/** The image tree: N PNG/JPEG files of tree A (or of --tree), copied under work/src. */
function imageTree() {
  const src = path.join(work, 'src');
  let files;
  if (values.tree) {
    const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1)).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : IMAGE.test(e.name) ? [path.join(d, e.name)] : []));
    const all = walk(values.tree);
    const stride = Math.max(1, all.length / N);
    files = Array.from({ length: Math.min(N, all.length) }, (_, i) => ({ src: all[Math.floor(i * stride)], rel: path.relative(values.tree, all[Math.floor(i * stride)]) }));
  } else {
    realTree('A'); // installs the packages tree A needs
    files = selectFiles({ ...REAL_TREES.A, exts: ['png', 'jpg', 'jpeg'] }, N);
  }
  fs.rmSync(work, { recursive: true, force: true });
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(src, f.rel)), { recursive: true });
    fs.copyFileSync(f.src, path.join(src, f.rel));
  }
  // the standalone script reads the same files, in the same sorted order
  fs.writeFileSync(path.join(work, 'files.txt'), files.map((f) => `${path.join(src, f.rel)}\n`).sort().join(''));
  return { src, count: files.length, bytes: files.reduce((t, f) => t + fs.statSync(f.src).size, 0) };
}

const wrapper = `
import os, resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.monotonic() - t, r.ru_maxrss * 1024, r.ru_utime + r.ru_stime)
`;
function timed(cmd, env) {
  execFileSync('sync');
  const [secs, rss, cpu] = execFileSync('/usr/bin/python3', ['-c', wrapper, ...cmd], { env: { ...process.env, ...env } }).toString().trim().split(' ').map(Number);
  return { secs, rssMiB: rss / 2 ** 20, cpu };
}

const tree = imageTree();
const packEnv = Object.fromEntries(values['pack-env'].map((kv) => kv.split('=')));
const out = path.join(work, 'out');
const sides = {
  pack: () => {
    fs.rmSync(`${out}.shards`, { recursive: true, force: true });
    return timed([process.execPath, cli, 'pack', tree.src, '--out', `${out}.shards`, '--pass', 'resize=224x224', '--quiet', '--concurrency', String(jobs * 2)], packEnv);
  },
  'sharp defaults': () => timed([process.execPath, standalone, path.join(work, 'files.txt'), `${out}.bin`, String(jobs), 'defaults'], {}),
  'sharp like pack': () => timed([process.execPath, standalone, path.join(work, 'files.txt'), `${out}.bin`, String(jobs), 'like-pack'], {}),
  // what explains a gap: the same plus the metadata() read the pass makes to keep depth and greyness, and pack's
  // own fixed cost (start-up, CLI, walk, shards, index, manifest) on the same files without the pass
  'sharp like pack + metadata': () => timed([process.execPath, standalone, path.join(work, 'files.txt'), `${out}.bin`, String(jobs), 'like-pack-metadata'], {}),
  'pack, no pass': () => {
    fs.rmSync(`${out}.nopass`, { recursive: true, force: true });
    return timed([process.execPath, cli, 'pack', tree.src, '--out', `${out}.nopass`, '--quiet'], packEnv);
  },
};
for (const side of Object.values(sides)) side(); // one warm-up each: files and code in the page cache
const runs = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
for (let r = 0; r < R; r++) {
  const names = r % 2 === 0 ? Object.keys(sides) : Object.keys(sides).reverse();
  for (const name of names) runs[name].push(sides[name]());
}
// the pack's output must hold every image, resized
const manifest = JSON.parse(fs.readFileSync(path.join(`${out}.shards`, 'manifest.json'), 'utf8'));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stat = (xs) => ({ median: Number(median(xs).toFixed(3)), min: Number(Math.min(...xs).toFixed(3)), max: Number(Math.max(...xs).toFixed(3)) });
const result = {
  images: tree.count,
  inputMiB: Number((tree.bytes / 2 ** 20).toFixed(1)),
  packedSamples: manifest.samples ?? manifest.index?.samples,
  jobs,
  packEnv,
  machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((x) => Number(x.toFixed(1))) },
  seconds: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, stat(v.map((x) => x.secs))])),
  cpuSeconds: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, stat(v.map((x) => x.cpu))])),
  imagesPerSec: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, Math.round(tree.count / median(v.map((x) => x.secs)))])),
  peakRssMiB: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, Math.round(median(v.map((x) => x.rssMiB)))])),
  'pack vs sharp defaults (goal >= 0.9)': stat(runs.pack.map((p, i) => runs['sharp defaults'][i].secs / p.secs)),
  'pack vs sharp like pack': stat(runs.pack.map((p, i) => runs['sharp like pack'][i].secs / p.secs)),
  // CPU seconds of all threads: what the work costs, whatever share of the cores the machine's load left it
  'pack vs sharp defaults, CPU': stat(runs.pack.map((p, i) => runs['sharp defaults'][i].cpu / p.cpu)),
  'pack vs sharp like pack, CPU': stat(runs.pack.map((p, i) => runs['sharp like pack'][i].cpu / p.cpu)),
};
const text = JSON.stringify(result, null, 2);
if (values.json) fs.writeFileSync(values.json, `${text}\n`);
process.stdout.write(`${text}\n`);
