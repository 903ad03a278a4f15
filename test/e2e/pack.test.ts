/** The built CLI's pack, merge and derive on temporary directories: the user's first commands. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import { pack } from '../../src/pack/pack.js';
import { initialReadThreads } from '../../src/pack/reader-start.js';
import { decodeNpy } from '../../src/passes/npy.js';
import { imageConcurrency } from '../../src/passes/image-concurrency.js';
import { ROOT, killAfterJournalLines, readTree, shardkit } from '../helpers/cli.js';
import { makeBinTree as makeTree, sampleOf } from '../helpers/bin-tree.js';
import { tmpDir } from '../helpers/tmp.js';

const IMAGES = path.join(ROOT, 'fixtures/images');
/** npm install builds the native addon where a compiler is found; the pack summary says whether it was used. */
const ADDON_BUILT = fs.existsSync(path.join(ROOT, 'src/native/build/Release/shardkit.node'));
const GOOD = ['--exclude', 'broken/**'];

describe('shardkit pack', () => {
  it('packs a tree with the default output and recreates it with tar -xf', async () => {
    const src = makeTree(50);
    const r = shardkit(['pack', src, '--shard', '64KB']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^packed 50 samples/);
    // the summary says when the pack ran without the addon (slower), and only then
    expect(r.stdout.includes('without the native addon')).toBe(!ADDON_BUILT);
    const out = `${src}.shards`;
    const portable = shardkit(['pack', src, '--out', path.join(tmpDir(), 'p'), '--shard', '64KB'], { env: { SHARDKIT_NATIVE: '0' } });
    expect(portable.stdout).toMatch(/; without the native addon \(slower: `npm run build:native` builds it\)\n$/);
    const m = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.shards.length).toBeGreaterThan(2);
    for (const s of m.shards) expect(s.bytes).toBeLessThanOrEqual(64_000);
    const x = tmpDir();
    for (const s of m.shards) {
      execFileSync('tar', ['-xf', path.join(out, s.file), '-C', x]);
    }
    expect(readTree(x)).toEqual(readTree(src));
    fs.rmSync(out, { recursive: true, force: true });
  });

  it('keeps a member named __proto__ through pack, passes (tag, format) and the loader\'s image decode', async () => {
    const src = tmpDir();
    fs.mkdirSync(path.join(src, 'cat'));
    const png = fs.readdirSync(path.join(IMAGES, 'cat')).find((f) => f.endsWith('.png'));
    expect(png, 'a png fixture').toBeDefined();
    fs.copyFileSync(path.join(IMAGES, 'cat', png!), path.join(src, 'cat', 's.png'));
    fs.writeFileSync(path.join(src, 'cat', 's.__proto__'), 'odd but legal');
    const ownProto = (members: object): string | undefined => {
      const d = Object.getOwnPropertyDescriptor(members, '__proto__');
      return d === undefined ? undefined : Buffer.from(d.value as Uint8Array).toString();
    };
    for (const passes of [[], ['--pass', 'tag=dirname'], ['--pass', 'format=webp']]) {
      const out = tmpDir();
      const r = shardkit(['pack', src, '--out', out, '--force', ...passes, '--quiet']);
      expect(r.status, r.stderr).toBe(0);
      const ds = await openDataset(out);
      const sample = await ds.get('cat/s');
      expect(ownProto(sample.members), passes.join(' ')).toBe('odd but legal');
      expect(Object.keys(sample.members)).toContain(passes.includes('format=webp') ? 'webp' : 'png');
      const [decoded] = (await ds.loader({ batchSize: 1, decode: 'image' }).next()).value!;
      expect(ownProto(decoded!.members as object)).toBe('odd but legal');
      await ds.close();
    }
  });

  it('runs resize, format and tag=dirname passes and records them in the manifest', async () => {
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', IMAGES, '--out', out, ...GOOD, '--pass', 'resize=16x16:cover', '--pass', 'format=webp:80', '--pass', 'tag=dirname', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.samples).toBe(6);
    // the walk lists names only: its counts, and no byte figure (the bytes read are sourceBytes)
    expect(summary.walk.files).toBeGreaterThanOrEqual(6);
    expect(summary.walk).not.toHaveProperty('bytes');
    expect(summary.sourceBytes).toBeGreaterThan(0);
    const s = await sampleOf(out, 'cat/001');
    expect(Object.keys(s.members).sort()).toEqual(['cls', 'txt', 'webp']);
    const meta = await sharp(s.members.webp).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 16, 16]);
    expect(new TextDecoder().decode(s.members.txt)).toBe('a cat, 64x48 gradient\n');
    const classes = fs.readFileSync(path.join(out, 'classes.txt'), 'utf8').trim().split('\n');
    expect(classes[Number(new TextDecoder().decode(s.members.cls))]).toBe('cat');
    const m = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.passes.map((p: { name: string }) => p.name)).toEqual(['resize', 'format', 'tag']);
    expect(m.passes[0].params).toMatchObject({ width: 16, height: 16, fit: 'cover' });
    expect(m.files).toEqual(['classes.txt', 'shardindex.json']);
  });

  it('normalizes to a float32 .npy tensor and tags from a CSV table', async () => {
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', IMAGES, '--out', out, ...GOOD, '--pass', 'resize=8x8:fill', '--pass', 'normalize=0.5,0.5,0.5:0.25,0.25,0.25', '--pass', `tag=${path.join(IMAGES, 'labels.csv')}`, '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    const s = await sampleOf(out, 'dog/003');
    const t = decodeNpy(s.members.npy!);
    expect(t.shape).toEqual([3, 8, 8]);
    expect(s.members.cls ?? s.members.json).toBeDefined();
  });

  it('runs a custom pass module', async () => {
    const dir = tmpDir();
    const mod = path.join(dir, 'upper.mjs');
    fs.writeFileSync(mod, "export default (s) => s.key.startsWith('dog/') ? 'skip' : ({ ...s, members: { ...s.members, note: new TextEncoder().encode(s.key.toUpperCase()) } });\n");
    const out = path.join(dir, 'ds');
    const r = shardkit(['pack', IMAGES, '--out', out, ...GOOD, '--pass-module', mod]);
    expect(r.status, r.stderr).toBe(0);
    const s = await sampleOf(out, 'cat/002');
    expect(new TextDecoder().decode(s.members.note)).toBe('CAT/002');
    const m = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.skipped.map((x: { path: string }) => x.path)).toEqual(['dog/003.webp', 'dog/004.jpg', 'dog/005.png']);
  });

  it("takes a pass module's ShardkitError from the package as its own (the CLI runs a bundle with its own copy)", () => {
    const dir = tmpDir();
    const mod = path.join(dir, 'check.mjs');
    // what `import { ShardkitError } from 'shardkit'` loads in a user's module
    const pkg = JSON.stringify(path.join(ROOT, (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { exports: { '.': { default: string } } }).exports['.'].default));
    fs.writeFileSync(mod, `import { ErrorCodes, ShardkitError } from ${pkg};\nexport default (s) => { if (s.key === 'cat/002') throw new ShardkitError(ErrorCodes.INPUT, 'label missing'); return s; };\n`);
    const skipped = path.join(dir, 'skip');
    const r = shardkit(['pack', IMAGES, '--out', skipped, ...GOOD, '--pass-module', mod, '--on-error', 'skip', '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    const m = JSON.parse(fs.readFileSync(path.join(skipped, 'manifest.json'), 'utf8'));
    expect(m.skipped).toEqual([{ path: 'cat/002.png', reason: 'SHARDKIT_ERR_INPUT: label missing' }]);
    const failed = shardkit(['pack', IMAGES, '--out', path.join(dir, 'fail'), ...GOOD, '--pass-module', mod]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toBe('shardkit: SHARDKIT_ERR_INPUT: label missing; fix or remove cat/002.png and run again with --resume, or add --on-error skip to leave such inputs out (--force starts over)\n');
  });

  it("takes whatever else a pass module throws as that sample's failure, not shardkit's internal error", () => {
    const dir = tmpDir();
    const mod = path.join(dir, 'buggy.mjs');
    fs.writeFileSync(mod, `export default (s) => { if (s.key === 'cat/002') return s.members.nope.length; return s; };\n`);
    const failed = shardkit(['pack', IMAGES, '--out', path.join(dir, 'fail'), ...GOOD, '--pass-module', mod]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT: pass custom:buggy\.mjs failed on sample cat\/002: TypeError: Cannot read properties of undefined \(reading 'length'\); fix or remove cat\/002\.png and run again with --resume, or add --on-error skip to leave such inputs out \(--force starts over\)\n$/);
    expect(fs.existsSync(path.join(dir, 'fail', 'manifest.json'))).toBe(false);
    const skipped = path.join(dir, 'skip');
    const r = shardkit(['pack', IMAGES, '--out', skipped, ...GOOD, '--pass-module', mod, '--on-error', 'skip', '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    const m = JSON.parse(fs.readFileSync(path.join(skipped, 'manifest.json'), 'utf8'));
    expect(m.skipped.map((x: { path: string }) => x.path)).toEqual(['cat/002.png']);
  });

  it('stops at an undecodable image with a one-line error and no manifest (--on-error fail)', () => {
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', IMAGES, '--out', out, '--pass', 'resize=16x16']);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INPUT: .*broken\/006/);
    expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
  });

  it('leaves bad inputs out and lists them with --on-error skip', () => {
    const out = path.join(tmpDir(), 'ds');
    const r = shardkit(['pack', IMAGES, '--out', out, '--pass', 'resize=16x16', '--on-error', 'skip']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1 skipped/);
    const m = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.skipped).toHaveLength(1);
    expect(m.skipped[0].path).toBe('broken/006.jpg');
    expect(m.skipped[0].reason).toMatch(/SHARDKIT_ERR_INPUT/);
    expect(r.stdout).toMatch(/\n  skipped broken\/006\.jpg: SHARDKIT_ERR_INPUT: [^\n]+\n$/);
  });

  it('records the same skip reasons every run, though libvips shares one error buffer between the images it decodes at once', async () => {
    const src = tmpDir();
    // damaged JPEGs of several kinds, decoded four at a time: libvips' words for each come out swapped or cut off
    const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#336699' } }).jpeg().toBuffer();
    for (let i = 0; i < 24; i++) fs.writeFileSync(path.join(src, `bad${String(i).padStart(2, '0')}.jpg`), jpeg.subarray(0, 40 + i * 25));
    const manifests = [0, 1, 2].map((run) => {
      const out = path.join(tmpDir(), `ds${run}`);
      const r = shardkit(['pack', src, '--out', out, '--pass', 'resize=32x32', '--on-error', 'skip', '--concurrency', '4', '--quiet']);
      expect(r.status, r.stderr).toBe(0);
      return fs.readFileSync(path.join(out, 'manifest.json'), 'utf8');
    });
    const skipped = JSON.parse(manifests[0]!).skipped as { path: string; reason: string }[];
    expect(skipped.length).toBeGreaterThan(5); // the longer ones decode, their missing rows grey
    for (const s of skipped) expect(s.reason).toBe(`SHARDKIT_ERR_INPUT: Cannot decode image member jpg of sample ${s.path.slice(0, -4)} in pass resize`);
    expect(manifests[1]).toBe(manifests[0]);
    expect(manifests[2]).toBe(manifests[0]);
  });

  it('lists at most 20 skips in the text summary, and says how many more the manifest has', () => {
    const src = tmpDir();
    for (let i = 0; i < 25; i++) fs.writeFileSync(path.join(src, `bad${String(i).padStart(2, '0')}.jpg`), 'not a jpeg');
    fs.writeFileSync(path.join(src, 'good.txt'), 'kept');
    const r = shardkit(['pack', src, '--out', path.join(tmpDir(), 'ds'), '--pass', 'resize=8x8', '--on-error', 'skip']);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').slice(0, -1);
    expect(lines[0]).toMatch(/^packed 1 sample .*; 25 skipped \(listed below and in the manifest\)/);
    expect(lines.slice(1, 21).map((l) => l.split(':')[0])).toEqual(Array.from({ length: 20 }, (_, i) => `  skipped bad${String(i).padStart(2, '0')}.jpg`));
    expect(lines.slice(21)).toEqual(['  ... and 5 more (manifest.json lists them all)']);
  });

  it('writes byte-identical datasets for identical input and options', () => {
    const src = makeTree(120);
    const a = path.join(tmpDir(), 'a');
    const b = path.join(tmpDir(), 'b');
    for (const out of [a, b]) expect(shardkit(['pack', src, '--out', out, '--shard', '100KB', '--compress', 'lz4', '--concurrency', out === a ? '1' : '16']).status).toBe(0);
    const ta = readTree(a, ['pack-report.json']);
    const tb = readTree(b, ['pack-report.json']);
    expect([...ta.keys()].sort()).toEqual([...tb.keys()].sort());
    for (const [name, bytes] of ta) expect(bytes.equals(tb.get(name) as Buffer), name).toBe(true);
  });

  it('writes the same bytes whether the source is read by several reader threads (CLI) or in the calling thread', async () => {
    const src = makeTree(1100, 100); // 1100 samples: five tasks of 256 spread over the reader threads
    // files of half a read batch or more travel in buffers of their own
    fs.writeFileSync(path.join(src, 'c0', 'big.bin'), Buffer.alloc(3 << 20, 7));
    fs.writeFileSync(path.join(src, 'c1', 'huge.bin'), Buffer.alloc(9 << 20, 9));
    // a name too long for a plain ustar header (pax), an empty file, a sample of three members, non-ASCII names
    fs.writeFileSync(path.join(src, 'c2', `${'n'.repeat(120)}.bin`), 'long name');
    fs.writeFileSync(path.join(src, 'c2', 'empty.bin'), '');
    for (const ext of ['json', 'cls', 'seg.png']) fs.writeFileSync(path.join(src, 'c3', `multi.${ext}`), ext.repeat(300));
    fs.writeFileSync(path.join(src, 'c3', 'é-ü.bin'), 'ü'.repeat(700));
    // keys the dataset cannot hold, left out (--on-error skip) and listed alike: a backslash, one too long for the index
    fs.writeFileSync(path.join(src, 'c4', 'back\\slash.bin'), 'b');
    const deep = path.join(src, 'c4', ...Array.from({ length: 9 }, (_, i) => `${i}`.repeat(230)));
    fs.mkdirSync(deep, { recursive: true });
    fs.writeFileSync(path.join(deep, 'k.bin'), 'k');
    // the reader threads read with the native addon when it is built (a task's uncompressed samples in one call);
    // SHARDKIT_NATIVE=0 reads with Node's fs and lays samples out in JavaScript
    // 'auto': no --read-threads, so initialReadThreads() (two on two cores or more), and a second on one core only
    // for reads seen coming from storage (not here: the tree was just written) or not measured (LZ4 and no addon
    // read in JavaScript)
    const cases = [['none', '2', '1', 'tar'], ['lz4', '3', '1', 'tar'], ['none', '2', '0', 'tar'], ['none', '1', '0', 'packed'], ['none', '2', '1', 'packed'], ['none', 'auto', '1', 'tar'], ['lz4', 'auto', '0', 'packed']] as const;
    for (const [compress, threads, native, layout] of cases) {
      const a = path.join(tmpDir(), 'a');
      const b = path.join(tmpDir(), 'b');
      const r = shardkit(['pack', src, '--out', a, '--shard', '1MiB', '--compress', compress, '--layout', layout, '--on-error', 'skip', '--json', ...(threads === 'auto' ? [] : ['--read-threads', threads])], { env: { SHARDKIT_NATIVE: native } });
      expect(r.status, r.stderr).toBe(0);
      const readers = (JSON.parse(r.stdout) as { readThreads: number }).readThreads;
      // the bundled CLI finds the addon wherever it was built (ADDON_BUILT: see the top of this file)
      expect((JSON.parse(r.stdout) as { native: boolean }).native).toBe(native === '1' && ADDON_BUILT);
      if (threads !== 'auto') expect(readers).toBe(Number(threads));
      else if (compress === 'none' && native === '1') expect(readers).toBe(initialReadThreads());
      else expect([1, 2]).toContain(readers);
      expect((JSON.parse(r.stdout) as { skipped: unknown[] }).skipped, r.stdout).toHaveLength(2);
      await pack({ source: src, out: b, shardBytes: 1 << 20, compress, layout, readThreads: 0, onError: 'skip' });
      const ta = readTree(a, ['pack-report.json']);
      const tb = readTree(b, ['pack-report.json']);
      expect([...ta.keys()].sort()).toEqual([...tb.keys()].sort());
      for (const [name, bytes] of ta) expect(bytes.equals(tb.get(name) as Buffer), `${compress} ${layout} native=${native} ${name}`).toBe(true);
    }
  });

  it('refuses to pack over a finished dataset without --force, and refuses bad arguments with exit 2', () => {
    const src = makeTree(5);
    const out = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', out]).status).toBe(0);
    const again = shardkit(['pack', src, '--out', out]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/^shardkit: SHARDKIT_ERR_OUTPUT_EXISTS: .*--force/);
    expect(shardkit(['pack', src, '--out', out, '--force']).status).toBe(0);
    for (const bad of [['--shard', '12XB'], ['--shard', '0'], ['--layout', 'zip'], ['--compress', 'gzip'], ['--part', '2/2'], ['--pass', 'resize=abc'], ['--on-error', 'maybe'], ['--concurrency', '0']]) {
      const r = shardkit(['pack', src, '--out', path.join(tmpDir(), 'x'), ...bad]);
      expect(r.status, bad.join(' ')).toBe(2);
      expect(r.stderr, bad.join(' ')).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: /);
      expect(r.stderr.trim().split('\n'), bad.join(' ')).toHaveLength(1);
    }
    const missing = shardkit(['pack', path.join(src, 'nope')]);
    expect(missing.status).toBe(2);
  });

  it('accepts human sizes', () => {
    const src = makeTree(40);
    for (const [size, bytes] of [['64KB', 64_000], ['64KiB', 65_536], ['0.5MiB', 524_288]] as const) {
      const out = path.join(tmpDir(), 'ds');
      expect(shardkit(['pack', src, '--out', out, '--shard', size]).status).toBe(0);
      const m = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
      for (const s of m.shards) expect(s.bytes).toBeLessThanOrEqual(bytes);
    }
  });

  it('resumes a killed pack to the same bytes as an uninterrupted one', async () => {
    const src = makeTree(3000, 6000);
    const full = path.join(tmpDir(), 'full');
    expect(shardkit(['pack', src, '--out', full, '--shard', '256KB']).status).toBe(0);
    const out = path.join(tmpDir(), 'killed');
    await killAfterJournalLines(['pack', src, '--out', out, '--shard', '256KB', '--concurrency', '1'], out, 6);
    expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
    const refused = shardkit(['pack', src, '--out', out, '--shard', '256KB']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/--resume/);
    // other filters would choose other samples than the cursor counted: refused, not mixed
    for (const filter of [['--exclude', '*.cls'], ['--include', '*.bin'], ['--include-hidden'], ['--follow-symlinks']]) {
      const mixed = shardkit(['pack', src, '--out', out, '--shard', '256KB', '--resume', ...filter]);
      expect(mixed.status, filter.join(' ')).toBe(2);
      expect(mixed.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: --resume needs the options of the interrupted pack/);
    }
    const resumed = shardkit(['pack', src, '--out', out, '--shard', '256KB', '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).resumedSamples).toBeGreaterThan(0);
    const a = readTree(full, ['pack-report.json']);
    const b = readTree(out, ['pack-report.json']);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [name, bytes] of a) expect(bytes.equals(b.get(name) as Buffer), name).toBe(true);
  });

  it('packs parts on separate "machines" and merges them into the content of a one-machine pack', async () => {
    const src = makeTree(200);
    const root = tmpDir();
    // a pass that fails on some samples, so every part has skipped inputs to list
    const mod = path.join(root, 'fail-some.mjs');
    fs.writeFileSync(mod, `export default (s) => { if (/[37]$/.test(s.key)) throw new Error('odd one'); return s; };\n`);
    const opts = ['--shard', '64KB', '--pass-module', mod, '--on-error', 'skip'];
    const one = path.join(root, 'one');
    expect(shardkit(['pack', src, '--out', one, ...opts]).status).toBe(0);
    const parts = [0, 1, 2].map((i) => path.join(root, `part${i}`));
    parts.forEach((p, i) => expect(shardkit(['pack', src, '--out', p, '--part', `${i}/3`, ...opts]).status).toBe(0));
    const manifestOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    parts.forEach((p, i) => expect(manifestOf(p).part).toEqual({ index: i, count: 3 }));
    // a part missing or given twice is refused: the result would not be the whole dataset
    const missing = shardkit(['merge', parts[0]!, parts[2]!, '--out', path.join(root, 'm1')]);
    expect([missing.status, missing.stderr.trim()]).toEqual([2, 'shardkit: SHARDKIT_ERR_INVALID_ARG: merge needs every part of the pack: 1/3 missing']);
    const twice = shardkit(['merge', parts[0]!, parts[1]!, parts[1]!, '--out', path.join(root, 'm2')]);
    expect(twice.status).toBe(2);
    expect(twice.stderr).toMatch(/are both part 1\/3/);
    expect(fs.existsSync(path.join(root, 'm1', 'manifest.json')) || fs.existsSync(path.join(root, 'm2', 'manifest.json'))).toBe(false);
    const merged = path.join(root, 'merged');
    const r = shardkit(['merge', ...parts, '--out', merged]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/hard linked/);
    // the parts given in another order merge to the same bytes
    const shuffled = path.join(root, 'shuffled');
    expect(shardkit(['merge', parts[2]!, parts[0]!, parts[1]!, '--out', shuffled]).status).toBe(0);
    for (const name of fs.readdirSync(merged)) expect(fs.readFileSync(path.join(shuffled, name)).equals(fs.readFileSync(path.join(merged, name))), name).toBe(true);
    const m = manifestOf(merged);
    expect(m.part).toBeUndefined();
    expect(m.skipped.length).toBeGreaterThan(10);
    expect(m.skipped).toEqual(manifestOf(one).skipped);
    const a = await openDataset(one);
    const b = await openDataset(merged);
    expect(b.size).toBe(a.size);
    for (let i = 0; i < a.size; i++) {
      const x = await a.at(i);
      const y = await b.at(i);
      expect(y.key).toBe(x.key);
      expect(Object.keys(y.members)).toEqual(Object.keys(x.members));
      for (const ext of Object.keys(x.members)) expect(Buffer.from(y.members[ext]!).equals(Buffer.from(x.members[ext]!))).toBe(true);
    }
    await a.close();
    await b.close();
  });

  it("the bin sizes libuv's pool for one image job per core plus 4 for reads, unless the user set it", () => {
    // the probe counts the pool's threads in the pack process itself (see test/helpers/uv-pool-probe.mjs)
    const root = tmpDir();
    const probe = path.join(ROOT, 'test', 'helpers', 'uv-pool-probe.mjs');
    const poolOf = (env: Record<string, string>): string => {
      const out = path.join(root, `ds${Object.values(env).join('')}`);
      const r = shardkit(['pack', IMAGES, '--out', out, ...GOOD, '--pass-module', probe, '--quiet'], { env });
      expect(r.status, r.stderr).toBe(0);
      return shardkit(['get', out, 'cat/001', '--ext', 'pool']).stdout;
    };
    expect(poolOf({ UV_THREADPOOL_SIZE: '' })).toBe(String(imageConcurrency().uvThreadpoolSize));
    expect(poolOf({ UV_THREADPOOL_SIZE: '3' })).toBe('3');
  });
});
