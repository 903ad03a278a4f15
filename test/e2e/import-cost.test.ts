/**
 * `import 'shardkit'` in a training process loads what reading needs, not the image, compression, chart and
 * benchmark libraries: sharp, lz4-napi, @node-rs/crc32, vega and lmdb load on first use (together about 0.4 s of
 * start-up here). The check sees the CommonJS ones (sharp, lz4-napi, @node-rs/crc32, lmdb) in the require cache;
 * vega and vega-lite are ES modules, which no cache lists.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { transformSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { straceAvailable } from '../../src/bench/strace.js';
import { initialReadThreads } from '../../src/pack/reader-start.js';
import { CLI, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

describe('import cost', () => {
  it('importing the package (and opening nothing) loads none of the heavy optional libraries', () => {
    const script = `
      import { createRequire } from 'node:module';
      await import(${JSON.stringify(path.join(ROOT, 'dist/src/index.js'))});
      const cjs = Object.keys(createRequire(import.meta.url).cache);
      const heavy = cjs.filter((p) => /node_modules[\\\\/](sharp|lz4-napi|@node-rs[\\\\/]crc32|lmdb|vega|vega-lite)[\\\\/]/.test(p));
      console.log(JSON.stringify({ heavy, cjs: cjs.length }));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const { heavy, cjs } = JSON.parse(r.stdout) as { heavy: string[]; cjs: number };
    expect(heavy).toEqual([]);
    // the check sees CommonJS modules at all (picomatch, p-limit are loaded): it is not vacuous
    expect(cjs).toBeGreaterThan(0);
  });

  it('shardkit --version (which loads no command now) prints the version; --help still lists every command', () => {
    for (const flag of ['--version', '-V']) {
      const r = spawnSync(process.execPath, [CLI, flag], { encoding: 'utf8' });
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);
    }
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    for (const command of ['pack', 'merge', 'derive', 'info', 'ls', 'get', 'verify', 'extract', 'reindex', 'index', 'synth', 'bench']) expect(help.stdout).toContain(`  ${command} `);
  });

  it('shardkit pack starts its readers first thing, and still exits at once when it stops before using them', () => {
    const help = spawnSync(process.execPath, [CLI, 'pack', '--help'], { encoding: 'utf8', timeout: 20_000 });
    expect([help.status, help.signal]).toEqual([0, null]);
    expect(help.stdout).toContain('--read-threads');
    const missing = spawnSync(process.execPath, [CLI, 'pack', path.join(ROOT, 'no-such-dir'), '--read-threads', '3'], { encoding: 'utf8', timeout: 20_000 });
    expect([missing.status, missing.signal]).toEqual([2, null]);
    expect(missing.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: source .*no-such-dir is not a directory/);
  });

  it('the reader thread module has no top-level await: Node 20 crashed (SIGTRAP) ending a worker that was still evaluating one', () => {
    // esbuild refuses top-level await in CommonJS output: a deterministic check of what the exit above hits by chance
    // (2 exits in 1,200 under load before the fix, nodejs/node#43182)
    const worker = fs.readFileSync(path.join(ROOT, 'dist', 'bin', 'source-worker.js'), 'utf8');
    expect(worker).toContain('parentPort');
    expect(() => transformSync(worker, { format: 'cjs', loader: 'js' })).not.toThrow();
    expect(() => transformSync(`${worker}\nawait 0;\n`, { format: 'cjs', loader: 'js' })).toThrow(/[Tt]op-level await/);
  });

  // strace is installed by .ci/run; where it cannot trace (no ptrace in a container), skipped like the bench's check
  it.runIf(straceAvailable())('the shardkit bin is the bundle: a pack loads only dist/bin, its reader thread included, and the native addon, and no package from node_modules', () => {
    expect(path.relative(ROOT, CLI)).toBe(path.join('dist', 'bin', 'shardkit.cjs'));
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.txt'), 'a');
    const out = path.join(tmpDir(), 'ds');
    // strace (installed by .ci/run) sees every file the process and its threads open; -z: the opens that succeeded,
    // each on a line of its own
    const r = spawnSync('strace', ['-f', '-qq', '-z', '-e', 'trace=openat', '-e', 'signal=none', process.execPath, CLI, 'pack', src, '--out', out, '--json'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { readThreads: number }).readThreads).toBe(initialReadThreads());
    const opened = [...r.stderr.matchAll(/openat\([^,]+, "([^"]+)"/g)].map((m) => path.relative(ROOT, m[1] as string));
    expect(opened.length).toBeGreaterThan(10);
    const dist = opened.filter((p) => p.startsWith(`dist${path.sep}`));
    expect(dist).toContain(path.join('dist', 'bin', 'source-worker.js'));
    // no module of tsc's output: one copy of every module, the bundle's
    expect(dist.filter((p) => !p.startsWith(`${path.join('dist', 'bin')}${path.sep}`))).toEqual([]);
    // commander and picomatch are in the bundle: a pack resolves no package in node_modules
    expect(opened.filter((p) => p.split(path.sep).includes('node_modules'))).toEqual([]);
    const addon = path.join('src', 'native', 'build', 'Release', 'shardkit.node');
    if (fs.existsSync(path.join(ROOT, addon))) expect(opened).toContain(addon);
  });
});

