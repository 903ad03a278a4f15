/** info, ls and get through the BUILT CLI (run `npm run build` first): every flag, JSON shapes, exit codes. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { CLI, shardkitWithFileLimit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const cli = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'buffer' });
const text = (args: string[]) => {
  const r = cli(args);
  return { status: r.status, out: r.stdout.toString(), err: r.stderr.toString() };
};
const enc = new TextEncoder();
let dir: string;

beforeAll(async () => {
  dir = tmpDir();
  const w = new DatasetWriter({ dir, compress: 'lz4', shardBytes: 8192 });
  for (let i = 0; i < 30; i++) w.add({ key: `${i < 10 ? 'cat' : 'dog'}/${String(i).padStart(2, '0')}`, members: { txt: enc.encode(`caption ${i} `.repeat(i + 1)), cls: enc.encode(String(i % 2)) } });
  w.add({ key: 'solo', members: { bin: Uint8Array.of(0, 1, 2, 255) } });
  await w.finish();
});

describe('info / ls / get', () => {
  it('info prints a summary, and --json the numbers', () => {
    const human = text(['info', dir]);
    expect(human.status).toBe(0);
    expect(human.out).toMatch(/samples\s+31 \(61 members\)/);
    const j = JSON.parse(text(['info', dir, '--json']).out);
    expect(j).toMatchObject({ layout: 'tar', compress: 'lz4', samples: 31, members: 61 });
    expect(j.shards).toBeGreaterThan(1);
    expect(j.overhead).toBeGreaterThan(0);
    expect(human.out).toMatch(/overhead\s+\d+\.\d% \(shards \+ index vs member bytes\)/);
  });

  it('info of a dataset of empty files gives no overhead figure rather than 0 %', async () => {
    const empty = tmpDir();
    const w = new DatasetWriter({ dir: empty });
    w.add({ key: 'e', members: { bin: new Uint8Array(0) } });
    await w.finish();
    expect(text(['info', empty]).out).toMatch(/overhead\s+n\/a \(no member bytes\)\n/);
    expect(JSON.parse(text(['info', empty, '--json']).out)).toMatchObject({ samples: 1, overhead: null });
  });

  it('info and verify count index pages the same way (the header page and the tree pages), and say 1 shard, not 1 shards', async () => {
    const one = tmpDir();
    const w = new DatasetWriter({ dir: one, pageSize: 1024 });
    for (let i = 0; i < 300; i++) w.add({ key: `k${String(i).padStart(4, '0')}`, members: { txt: enc.encode(String(i)) } });
    await w.finish();
    const tree = JSON.parse(text(['verify', one, '--json']).out).checked.pages as number;
    expect(tree).toBeGreaterThan(2);
    const pages = `${tree + 1} index pages (a header page and ${tree} tree pages)`;
    expect(text(['info', one]).out).toMatch(new RegExp(`index\\s+[^\\n]*, ${pages.replace(/[()]/g, '\\$&')} of 1024 B, height`));
    expect(JSON.parse(text(['info', one, '--json']).out).index.pages).toBe(tree + 1);
    const verified = text(['verify', one]);
    expect(verified.out).toBe(`ok: ${one}: 300 samples, ${pages}, 1 shard (301 KiB), 300 members, 790 B\n`);
  });

  it('ls lists keys in order; --prefix, --limit, --long and --json', () => {
    const all = text(['ls', dir]).out.trim().split('\n');
    expect(all).toHaveLength(31);
    expect(all).toEqual([...all].sort());
    expect(text(['ls', dir, '--prefix', 'dog/']).out.trim().split('\n')).toHaveLength(20);
    expect(text(['ls', dir, '--prefix', 'cat/', '--limit', '3']).out).toBe('cat/00\ncat/01\ncat/02\n');
    const long = text(['ls', dir, '--long', '--prefix', 'solo']).out.trim().split('\t');
    expect(long[0]).toBe('solo');
    expect(long[4]).toBe('bin:4');
    const lines = text(['ls', dir, '--json', '--prefix', 'dog/1']).out.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.key)).toEqual(Array.from({ length: 10 }, (_, i) => `dog/${10 + i}`));
    expect(lines[0].members.map((m: { ext: string }) => m.ext).sort()).toEqual(['cls', 'txt']);
  });

  it('ls prints one line per key and one field per column, whatever the keys hold: odd ones as JSON strings', async () => {
    const odd = tmpDir();
    const keys = ['a\nb', 'c\td', '"q', 'plain', 'uni\u00e9', 'nel\u0085', 'ls\u2028x'];
    const w = new DatasetWriter({ dir: odd });
    for (const key of [...keys].sort()) w.add({ key, members: { 'x\ty': enc.encode('1') } });
    await w.finish();
    const lines = text(['ls', odd]).out.split('\n').slice(0, -1);
    expect(lines).toEqual(['"\\"q"', '"a\\nb"', '"c\\td"', '"ls\\u2028x"', '"nel\\u0085"', 'plain', 'uni\u00e9']);
    expect(lines.map((l) => (l.startsWith('"') ? JSON.parse(l) : l))).toEqual([...keys].sort());
    const long = text(['ls', odd, '--long']).out.split('\n').slice(0, -1).map((l) => l.split('\t'));
    expect(long.map((f) => f.length)).toEqual([5, 5, 5, 5, 5, 5, 5]);
    expect(long[0]![4]).toBe('"x\\ty":1');
  });

  it('get and extract read members over the default size guard when told to (--max-member-bytes), and say so', () => {
    // dog/29's txt is 330 bytes: a guard of 100 refuses it as a member over 1 GiB is refused by default
    const refused = text(['get', dir, 'dog/29', '--ext', 'txt', '--max-member-bytes', '100']);
    expect(refused.status).toBe(1);
    expect(refused.err).toMatch(/^shardkit: SHARDKIT_ERR_TOO_LARGE: sample "dog\/29" member "txt" is 330 bytes, over maxMemberBytes 100 \(.*--max-member-bytes.*\)\n$/);
    expect(text(['get', dir, 'dog/29', '--ext', 'txt', '--max-member-bytes', '1KiB']).out).toBe('caption 29 '.repeat(30));
    const out = tmpDir();
    expect(text(['extract', dir, path.join(out, 'x'), '--max-member-bytes', '100']).err).toMatch(/SHARDKIT_ERR_TOO_LARGE: .*over maxMemberBytes 100/);
    expect(text(['extract', dir, path.join(out, 'y'), '--max-member-bytes', '1KiB']).status).toBe(0);
    expect(text(['get', dir, 'dog/29', '--max-member-bytes', 'lots']).status).toBe(2);
  });

  it('get writes bytes to stdout or --out; --ext chooses; errors are one line', () => {
    const solo = cli(['get', dir, 'solo']);
    expect(solo.status).toBe(0);
    expect([...solo.stdout]).toEqual([0, 1, 2, 255]);
    expect(text(['get', dir, 'dog/12', '--ext', 'txt']).out).toBe('caption 12 '.repeat(13));
    const out = path.join(tmpDir(), 'x.txt');
    expect(text(['get', dir, 'cat/03', '--ext', 'cls', '--out', out]).status).toBe(0);
    expect(fs.readFileSync(out, 'utf8')).toBe('1');
    const ambiguous = text(['get', dir, 'cat/03']);
    expect(ambiguous.status).toBe(2);
    expect(ambiguous.err).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: .*--ext\n$/);
    const missing = text(['get', dir, 'nope']);
    expect(missing.status).toBe(1);
    expect(missing.err).toMatch(/^shardkit: SHARDKIT_ERR_KEY_NOT_FOUND: [^\n]+\n$/);
    expect(text(['get', dir, 'cat/03', '--ext', 'png']).err).toMatch(/^shardkit: SHARDKIT_ERR_KEY_NOT_FOUND: .*has no member "png"/);
  });

  it.runIf(fs.existsSync('/dev/full'))('output that cannot be written (a full disk) is one line on stderr and exit 1, not a stack trace', () => {
    for (const args of [['ls', dir], ['info', dir], ['get', dir, 'solo'], ['verify', dir, '--json']]) {
      const full = fs.openSync('/dev/full', 'w');
      try {
        const r = spawnSync(process.execPath, [CLI, ...args], { stdio: ['ignore', full, 'pipe'], encoding: 'utf8' });
        expect([r.status, r.stderr], args.join(' ')).toEqual([1, 'shardkit: SHARDKIT_ERR_IO: cannot write to stdout: ENOSPC: no space left on device, write\n']);
      } finally {
        fs.closeSync(full);
      }
    }
  });

  it('get --out: a failed write (EFBIG) leaves no cut-short file and no temporary; a file there keeps its bytes and mode', async () => {
    const big = tmpDir();
    const w = new DatasetWriter({ dir: big });
    w.add({ key: 'b', members: { bin: new Uint8Array(200_000).fill(7) } });
    await w.finish();
    const where = tmpDir();
    const fresh = path.join(where, 'fresh.bin');
    const failed = shardkitWithFileLimit(['get', big, 'b', '--out', fresh], 100);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/^shardkit: SHARDKIT_ERR_IO: cannot write .*fresh\.bin: EFBIG[^\n]*\n$/);
    const kept = path.join(where, 'kept.bin');
    fs.writeFileSync(kept, 'earlier');
    fs.chmodSync(kept, 0o600);
    expect(shardkitWithFileLimit(['get', big, 'b', '--out', kept], 100).status).toBe(1);
    expect(fs.readdirSync(where)).toEqual(['kept.bin']);
    expect(fs.readFileSync(kept, 'utf8')).toBe('earlier');
    // a complete write replaces the file and keeps its permission bits (a private file stays private)
    expect(text(['get', big, 'b', '--out', kept]).status).toBe(0);
    expect(fs.readFileSync(kept).equals(Buffer.alloc(200_000, 7))).toBe(true);
    expect(fs.statSync(kept).mode & 0o777).toBe(0o600);
    // a symbolic link named by --out is written through (as `cp` does), not replaced by a file
    const target = path.join(tmpDir(), 'target.txt');
    fs.writeFileSync(target, 'old');
    const link = path.join(where, 'link.txt');
    fs.symlinkSync(target, link);
    expect(text(['get', dir, 'cat/03', '--ext', 'cls', '--out', link]).status).toBe(0);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(target, 'utf8')).toBe('1');
  });
});
