/**
 * Runs the README's walkthrough as a user copies it: the shell lines, the loader script saved as loader.mjs, and
 * the measuring lines, in that order, in one bash -e session. Two lines are stood in for, since a test must not
 * change the machine's global npm prefix: `npm link` (a `shardkit` on PATH: here a shim running the built CLI)
 * and `npm link shardkit` (node_modules/shardkit: here a symbolic link to this clone). Every other line runs
 * exactly as printed.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT } from '../helpers/cli.js';
import { fencedBlocks } from '../helpers/markdown.js';
import { tmpDir } from '../helpers/tmp.js';

/** Debian's interpreter, which sees python3-torch and python3-crc32c (the python3 first on PATH may not). */
const PYTHON = '/usr/bin/python3';

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README walkthrough', () => {
  it('runs line by line: synth, pack with passes, info, ls, get, verify, the loader, bench; then the library and Python snippets', () => {
    const [inspect, measure] = fencedBlocks(README, '## Walkthrough', 'sh');
    const [loader] = fencedBlocks(README, '## Walkthrough', 'js');
    const [library] = fencedBlocks(README, '## The library in brief', 'js');
    const [install, ...python] = [...fencedBlocks(README, '## Use from Python', 'sh'), ...fencedBlocks(README, '## Use from Python', 'python')];
    expect(install).toContain('pip install --no-build-isolation ./formats/python');
    expect(python).toHaveLength(2);
    expect(inspect && measure && loader && library).toBeTruthy();

    const dir = tmpDir();
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'shardkit'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`, { mode: 0o755 });
    const standIns = (block: string) =>
      block
        .split('\n')
        .map((line) => {
          if (/^npm link(\s|$)/.test(line)) return ': npm link';
          return line.replace(/&& npm link shardkit\b.*$/, `&& mkdir node_modules && ln -s ${JSON.stringify(ROOT)} node_modules/shardkit`);
        })
        .join('\n');
    expect(standIns(inspect!)).not.toBe(inspect); // the stand-ins found their lines

    const script = [
      standIns(inspect!),
      "cat > loader.mjs <<'SHARDKIT_EOF'",
      loader!.replace(/\n$/, ''),
      'SHARDKIT_EOF',
      'node loader.mjs',
      measure!,
      "cat > library.mjs <<'SHARDKIT_EOF'",
      library!.replace(/\n$/, ''),
      'SHARDKIT_EOF',
      'node library.mjs',
      'ls notes.shards/manifest.json photos-copy.shards/manifest.json',
      // the Python snippets, with the package on PYTHONPATH standing in for its pip install
      ...python.flatMap((code, i) => [`cat > snippet${i}.py <<'SHARDKIT_EOF'`, code.replace(/\n$/, ''), 'SHARDKIT_EOF', `PYTHONPATH=${JSON.stringify(path.join(ROOT, 'formats/python'))} ${PYTHON} snippet${i}.py`]),
      'ls first.jpg report/report.html report/report.md report/report.json photos.shards/manifest.json',
    ].join('\n');
    const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, TMPDIR: dir, CI: 'true' },
      maxBuffer: 1 << 26,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('epoch 0: 1000 samples\nepoch 1: 64 samples\nresumed epoch 1: 936 more samples\n');
    expect(r.stdout).toContain('\n1000\ntrain/n01440764/n01440764_0\ntrain/n01440764/n01440764_1\n'); // library.mjs
    expect(r.stdout).toContain('\n1000 train/n01440764/n01440764_0 100\n'); // Python, random access
    expect(r.stdout).toContain('\n1 shardkit-loader-state 8\n'); // Python, a DataLoader over two epochs
    expect(r.stdout).toMatch(/^ok: photos-224\.shards: 1000 samples/m); // verify's line
    // get wrote the member's bytes: a JPEG no larger than 224x224
    const work = fs.readdirSync(dir).filter((d) => d.startsWith('tmp.'));
    expect(work).toHaveLength(1);
    const jpg = fs.readFileSync(path.join(dir, work[0]!, 'first.jpg'));
    expect([jpg[0], jpg[1]]).toEqual([0xff, 0xd8]);
  }, 240_000);
});
