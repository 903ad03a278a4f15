#!/usr/bin/env node
/**
 * Fresh-process benchmark (issue 28, goal 3): what a training job pays at start. A process that imports shardkit
 * (`import('shardkit')`, the package entry, or with `--entry shardkit/read` the reading API alone), opens the dataset and reads one epoch in random order, timed from spawn
 * to exit, against a process that reads the raw files with `readFileSync` in the same order. Both sides get the
 * order ready-made (the raw side a file of paths, the shardkit side a file of positions: the loader's own plan for
 * seed 1, epoch 0, shuffle 'full'), both verify what they must (shardkit checks every member's CRC32C; raw checks
 * nothing), both report the bytes they read, which must be equal. Warm page cache (every file read once before), or
 * with --cold, what a job meets on a node that has not read the dataset yet: before every timed process, `--cold data`
 * drops the raw files and the dataset's files from the page cache (posix_fadvise DONTNEED, through python3: Node has
 * no fadvise; Node's and shardkit's own code stay cached, and so do the raw files' directory entries and inodes, which
 * favours the raw side), `--cold all` drops every cached file, code included (drop_caches: root).
 *
 * Sides, alternated in fresh processes (A B C D A B C D ...), --runs times: `node -e 0` (Node's own start-up),
 * raw readFileSync, shardkit atSync (a loop over the planned positions), shardkit loader (batch 64, full shuffle).
 * Reports medians with min and max of the spawn-to-exit time, ratios raw / shardkit per run (median, min-max), and
 * where a shardkit process spends its time, from timestamps taken inside it (performance.now(), which counts from
 * the process's start): Node start-up until the first line of the script, import, open, first sample or batch, rest
 * of the epoch. Then, in one process per side, --epochs epochs back to back: the first epoch against the median of
 * the later ones (goal: first within 1.3x). Every phase also in CPU ms of the process (process.cpuUsage, all threads),
 * which the machine's load does not stretch. --cpu-prof DIR also writes one `node --cpu-prof` profile per shardkit
 * side and prints the files that took the most self time.
 *
 *   npm run build && node bench/fresh.mjs [--real A|B | --tree DIR] [--runs 5] [--epochs 4] [--entry shardkit|shardkit/read]
 *                                         [--cold data|all] [--cpu-prof DIR] [--json FILE]
 *
 * Goal: a fresh shardkit process >= 1.5x the fresh raw process on tree A (5,000 files). With --cold, the epochs run
 * back to back in one process compare a cold first epoch with warm later ones: the first-epoch goal is a warm one.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
/** CPU ms of this process so far (all threads, user + system): what a phase costs whatever the machine's load. */
const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const SEED = 1;
const BATCH = 64;

/** Child: one side, from process start. Prints timestamps (ms since the process started) and bytes as JSON. */
async function child(side, dir, epochs, entry) {
  const t = { scriptStart: performance.now() };
  const c = { scriptStart: cpuNow() };
  const mark = (name) => {
    t[name] = performance.now();
    c[name] = cpuNow();
  };
  let bytes = [];
  if (side === 'raw') {
    const files = fs.readFileSync(path.join(dir, 'order-files.txt'), 'utf8').split('\n');
    files.pop();
    mark('opened');
    for (let e = 0; e < epochs; e++) {
      let n = 0;
      for (let k = 0; k < files.length; k++) {
        n += fs.readFileSync(files[k]).length;
        if (e === 0 && k === 0) mark('first');
      }
      bytes.push(n);
      mark(`epoch${e}`);
    }
  } else {
    const { openDataset, planEpoch } = await import(entry);
    mark('imported');
    const ds = await openDataset(path.join(dir, 'ds'));
    mark('opened');
    const sumMembers = (s) => {
      let n = 0;
      for (const ext in s.members) n += s.members[ext].length;
      return n;
    };
    for (let e = 0; e < epochs; e++) {
      let n = 0;
      if (side === 'atSync') {
        // epoch 0's order is the one in the positions file (the same the raw side reads); later ones are planned
        const order = e === 0 ? JSON.parse(fs.readFileSync(path.join(dir, 'order-positions.json'), 'utf8')) : planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed: SEED, epoch: e, shuffle: 'full' }).order;
        for (let k = 0; k < order.length; k++) {
          n += sumMembers(ds.atSync(order[k]));
          if (e === 0 && k === 0) mark('first');
        }
      } else {
        for await (const batch of ds.loader({ batchSize: BATCH, shuffle: 'full', seed: SEED, epoch: e })) {
          if (e === 0 && t.first === undefined) mark('first');
          for (const s of batch) n += sumMembers(s);
        }
      }
      bytes.push(n);
      mark(`epoch${e}`);
    }
    await ds.close();
  }
  mark('end');
  process.stdout.write(`${JSON.stringify({ t, c, bytes })}\n`);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Drops files from the page cache through posix_fadvise(DONTNEED): the paths, one a line, on stdin. */
const FADVISE_DONTNEED_PY = `import os, sys
for p in sys.stdin.read().split('\\n'):
    if p:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)`;

/** Before a timed process with --cold: `data` drops the raw files and the dataset's, `all` every cached file. */
function dropCache(mode, dir) {
  if (mode === '') return;
  execFileSync('sync');
  if (mode === 'all') {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
    return;
  }
  const ds = path.join(dir, 'ds');
  const files = [fs.readFileSync(path.join(dir, 'order-files.txt'), 'utf8'), ...fs.readdirSync(ds).map((f) => `${path.join(ds, f)}\n`)].join('');
  execFileSync('python3', ['-c', FADVISE_DONTNEED_PY], { input: files, stdio: ['pipe', 'ignore', 'inherit'] });
}

const stat = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const r1 = (x) => Math.round(x * 10) / 10;

function spawnTimed(args, env = process.env) {
  const t0 = performance.now();
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env });
  const ms = performance.now() - t0;
  if (res.status !== 0) throw new Error(`${args.join(' ')} failed (exit ${res.status})`);
  const last = res.stdout.trim().split('\n').pop();
  return { ms, out: last ? JSON.parse(last) : undefined };
}

/** What the shardkit sides import: --entry (the package's main entry, or shardkit/read, the reading API alone). */
let entry = 'shardkit';

function sideArgs(side, dir, epochs, prof) {
  return [...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : []), SELF, '--child', side, '--dir', dir, '--epochs', String(epochs), '--entry', entry];
}

/** Self time per script file in a .cpuprofile, top `n`, in ms. */
function profileSummary(file, n = 8) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((node) => [node.id, node]));
  const self = new Map();
  for (let i = 0; i < p.samples.length; i++) {
    const node = byId.get(p.samples[i]);
    const url = node.callFrame.url || `(${node.callFrame.functionName || 'native'})`;
    const where = url.replace(/^file:\/\/.*\/(dist|node_modules)\//, '$1/');
    self.set(where, (self.get(where) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, n).map(([where, ms]) => ({ where, ms: r1(ms) }));
}

async function prepare(opts) {
  const { realTree } = await import('./real-trees.mjs');
  const tree = opts.tree ? { dir: opts.tree, name: path.basename(opts.tree) } : realTree(opts.real);
  const dir = opts.dir || path.join(os.tmpdir(), `shardkit-bench-fresh-${opts.real || path.basename(opts.tree)}`);
  const { pack, openDataset, planEpoch, memberPath } = await import('../dist/src/index.js');
  const stamp = path.join(dir, 'order-files.txt');
  if (!fs.existsSync(stamp) || fs.readFileSync(path.join(dir, 'tree.txt'), 'utf8') !== tree.dir) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    // key rule 'path': one sample per file (a real tree has names like RelNotes/1.5.0.2.txt, which the default
    // WebDataset rule would fold into one sample of numbered members, and refuses)
    await pack({ source: tree.dir, out: path.join(dir, 'ds'), keyRule: 'path' });
    const ds = await openDataset(path.join(dir, 'ds'));
    const files = [];
    for await (const e of ds.entries()) files.push(e.members.map((m) => path.join(tree.dir, memberPath(e.key, m.ext))));
    const order = planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed: SEED, epoch: 0, shuffle: 'full' }).order;
    await ds.close();
    fs.writeFileSync(path.join(dir, 'order-positions.json'), JSON.stringify(Array.from(order)));
    fs.writeFileSync(path.join(dir, 'tree.txt'), tree.dir);
    fs.writeFileSync(stamp, Array.from(order, (i) => files[i].map((f) => `${f}\n`).join('')).join(''));
  }
  // warm page cache: every raw file and every dataset file read once
  for (const f of fs.readFileSync(stamp, 'utf8').split('\n')) if (f) fs.readFileSync(f);
  for (const f of fs.readdirSync(path.join(dir, 'ds'))) fs.readFileSync(path.join(dir, 'ds', f));
  return { dir, tree };
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (flag, dflt) => {
    const i = args.indexOf(flag);
    return i < 0 ? dflt : args[i + 1];
  };
  if (opt('--child')) return child(opt('--child'), opt('--dir'), Number(opt('--epochs', '1')), opt('--entry', 'shardkit'));
  const opts = { real: opt('--real', opt('--tree') ? '' : 'A'), tree: opt('--tree', ''), dir: opt('--dir', ''), runs: Number(opt('--runs', '5')), epochs: Number(opt('--epochs', '4')), prof: opt('--cpu-prof', ''), json: opt('--json', ''), entry: opt('--entry', 'shardkit'), cold: opt('--cold', '') };
  if (opts.entry !== 'shardkit' && opts.entry !== 'shardkit/read') throw new Error(`--entry is shardkit or shardkit/read, not ${opts.entry}`);
  if (!['', 'data', 'all'].includes(opts.cold)) throw new Error(`--cold is data or all, not ${opts.cold}`);
  if (opts.cold === 'all' && process.getuid?.() !== 0) throw new Error('--cold all writes /proc/sys/vm/drop_caches: run as root, or use --cold data');
  entry = opts.entry;
  const { dir, tree } = await prepare(opts);

  const sides = ['node -e 0', 'raw', 'atSync', 'loader'];
  const runs = Object.fromEntries(sides.map((s) => [s, []]));
  const inside = { raw: [], atSync: [], loader: [] };
  let expected;
  // one untimed round first: the same files, code and shard maps are then in the page cache for every timed run
  for (let r = -1; r < opts.runs; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      dropCache(opts.cold, dir);
      const { ms, out } = side === 'node -e 0' ? spawnTimed(['-e', '0']) : spawnTimed(sideArgs(side, dir, 1, ''));
      if (out) {
        expected ??= out.bytes[0];
        if (out.bytes[0] !== expected) throw new Error(`${side} read ${out.bytes[0]} bytes, raw read ${expected}`);
      }
      if (r < 0) continue;
      runs[side].push(ms);
      if (out) inside[side].push(out);
    }
  }
  const phases = (side, which = 't') => {
    const ts = inside[side].map((o) => o[which]);
    const m = (f) => r1(median(ts.map(f)));
    return {
      nodeStartToScriptMs: m((t) => t.scriptStart),
      importMs: side === 'raw' ? 0 : m((t) => t.imported - t.scriptStart),
      openMs: m((t) => t.opened - (t.imported ?? t.scriptStart)),
      firstReadMs: m((t) => t.first - t.opened),
      restOfEpochMs: m((t) => t.epoch0 - t.first),
      closeAndExitMs: m((t) => t.end - t.epoch0),
      insideProcessMs: m((t) => t.end),
    };
  };
  const paired = (side) => runs.raw.map((raw, i) => raw / runs[side][i]);

  // first epoch vs later ones, in one process per side
  const epochRuns = {};
  for (const side of ['raw', 'atSync', 'loader']) {
    dropCache(opts.cold, dir);
    const { out } = spawnTimed(sideArgs(side, dir, opts.epochs, ''));
    const span = (x) => out.bytes.map((_, e) => x[`epoch${e}`] - (e === 0 ? x.opened : x[`epoch${e - 1}`]));
    const times = span(out.t);
    const cpu = span(out.c);
    epochRuns[side] = { epochMs: times.map(r1), firstOverLaterMedian: r1((times[0] / median(times.slice(1))) * 100) / 100, epochCpuMs: cpu.map(r1), firstOverLaterMedianCpu: r1((cpu[0] / median(cpu.slice(1))) * 100) / 100 };
  }

  let profiles;
  if (opts.prof) {
    profiles = {};
    fs.mkdirSync(opts.prof, { recursive: true });
    for (const side of ['atSync', 'loader']) {
      const before = new Set(fs.readdirSync(opts.prof));
      spawnTimed(sideArgs(side, dir, 1, opts.prof));
      const made = fs.readdirSync(opts.prof).filter((f) => !before.has(f) && f.endsWith('.cpuprofile'));
      profiles[side] = { file: path.join(opts.prof, made[0]), topSelfMs: profileSummary(path.join(opts.prof, made[0])) };
    }
  }

  const n = fs.readFileSync(path.join(dir, 'order-files.txt'), 'utf8').split('\n').length - 1;
  const report = {
    tree: { dir: tree.dir, files: n, fingerprint: tree.fingerprint, bytes: expected },
    machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg().map(r1) },
    settings: { entry: opts.entry, runs: opts.runs, order: 'full shuffle, seed 1, epoch 0 (the loader plan); same order on every side', cache: { '': 'warm', data: 'cold: the raw files and the dataset dropped before every process (posix_fadvise)', all: 'cold: every cached file dropped before every process (drop_caches)' }[opts.cold], verify: 'shardkit: CRC32C on every member; raw: none', loaderBatch: BATCH },
    spawnToExitMs: Object.fromEntries(sides.map((s) => [s, { ...stat(runs[s]), runs: runs[s].map(r1) }])),
    ratios: {
      'fresh atSync vs fresh raw (goal >= 1.5)': { ofMedians: r1((median(runs.raw) / median(runs.atSync)) * 100) / 100, pairedRuns: stat(paired('atSync')) },
      'fresh loader vs fresh raw (goal >= 1.5)': { ofMedians: r1((median(runs.raw) / median(runs.loader)) * 100) / 100, pairedRuns: stat(paired('loader')) },
      // CPU of the whole process (start-up included, exit excluded), per alternated run
      'fresh atSync vs fresh raw, CPU': stat(inside.raw.map((o, i) => o.c.end / inside.atSync[i].c.end)),
      'fresh loader vs fresh raw, CPU': stat(inside.raw.map((o, i) => o.c.end / inside.loader[i].c.end)),
    },
    phasesMs: { raw: phases('raw'), atSync: phases('atSync'), loader: phases('loader') },
    phasesCpuMs: { raw: phases('raw', 'c'), atSync: phases('atSync', 'c'), loader: phases('loader', 'c') },
    epochsInOneProcess: epochRuns,
    ...(profiles ? { profiles } : {}),
  };
  const text = JSON.stringify(report, null, 2);
  if (opts.json) fs.writeFileSync(opts.json, `${text}\n`);
  process.stdout.write(`${text}\n`);
}

await main();
