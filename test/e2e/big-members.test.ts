/**
 * Issue 26, item 3, through the built CLI: members larger than a buffer are streamed end to end. The limits are
 * lowered (SHARDKIT_TEST_MAX_MEMBER_BYTES for pack, SHARDKIT_TEST_MAX_SPAN_BYTES for verify, get --out and
 * extract) so that files of a few MiB take the paths a 5 GiB file takes: pack (with its reader threads) -> verify
 * -> get --out -> extract, and GNU tar lists and extracts the shards to the same bytes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shardkit } from '../helpers/cli.js';
import { hasTool, run } from '../helpers/tools.js';
import { tmpDir } from '../helpers/tmp.js';

const LIMITS = { SHARDKIT_TEST_MAX_MEMBER_BYTES: String(1 << 20), SHARDKIT_TEST_MAX_SPAN_BYTES: String(1 << 20), SHARDKIT_TEST_VERIFY_CHUNK_BYTES: String(300_000) };

function noise(seed: number, n: number): Buffer {
  const out = Buffer.allocUnsafe(n);
  let x = seed + 1;
  for (let i = 0; i < n; i++) out[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
  return out;
}

/** A tree with two files past a batch chunk (4 MiB) and the limit, among small ones; relative path -> bytes. */
function tree(): { src: string; files: Map<string, Buffer> } {
  const src = tmpDir();
  const files = new Map<string, Buffer>([
    ['a.txt', Buffer.from('first')],
    ['d/big.bin', noise(1, (6 << 20) + 333)],
    ['d/big.json', Buffer.from('{"label":3}')],
    ['d/e.txt', Buffer.from('between')],
    ['d/zero.bin', Buffer.alloc((5 << 20) + 1)],
    ['z.txt', Buffer.from('last')],
  ]);
  for (const [rel, bytes] of files) {
    fs.mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
    fs.writeFileSync(path.join(src, rel), bytes);
  }
  return { src, files };
}

function listTree(root: string, rel = ''): string[] {
  return fs.readdirSync(path.join(root, rel), { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? listTree(root, path.join(rel, d.name)) : [path.join(rel, d.name)]));
}

describe('members past the buffer limit, end to end', () => {
  for (const layout of ['tar', 'packed'] as const) {
    it(`big_members_end_to_end (${layout}): pack -> verify -> get --out -> extract give the source bytes`, () => {
      const { src, files } = tree();
      const out = path.join(tmpDir(), 'ds');
      const packed = shardkit(['pack', src, '--out', out, '--layout', layout, '--shard', '4MiB', '--quiet'], { env: LIMITS });
      expect(packed.stderr).toBe('');
      expect(packed.status).toBe(0);
      const verified = shardkit(['verify', out], { env: LIMITS });
      expect(verified.status).toBe(0);
      const got = path.join(tmpDir(), 'big.bin');
      expect(shardkit(['get', out, 'd/big', '--ext', 'bin', '--out', got], { env: LIMITS }).status).toBe(0);
      expect(fs.readFileSync(got).equals(files.get('d/big.bin') as Buffer)).toBe(true);
      const target = path.join(tmpDir(), 'x');
      const extracted = shardkit(['extract', out, target], { env: LIMITS });
      expect(extracted.stderr).toBe('');
      expect(listTree(target).sort()).toEqual([...files.keys()].sort());
      for (const [rel, bytes] of files) expect(fs.readFileSync(path.join(target, rel)).equals(bytes), rel).toBe(true);
      if (layout !== 'tar') return;
      hasTool('tar');
      const shards = fs.readdirSync(out).filter((f) => f.endsWith('.tar')).sort();
      // each big sample over the 4 MiB budget has a shard of its own
      expect(shards.length).toBeGreaterThanOrEqual(3);
      const listed = shards.flatMap((s) => run('tar', ['-tvf', path.join(out, s)]).split('\n').filter(Boolean));
      const sizes = Object.fromEntries(listed.map((line) => { const f = line.split(/\s+/); return [f[5], Number(f[2])]; }));
      expect(sizes).toEqual(Object.fromEntries([...files].map(([rel, b]) => [rel, b.length])));
      const byTar = tmpDir();
      for (const s of shards) run('tar', ['-xf', path.join(out, s), '-C', byTar]);
      for (const [rel, bytes] of files) expect(fs.readFileSync(path.join(byTar, rel)).equals(bytes), rel).toBe(true);
    });
  }

  it('big_members_with_lz4: stored as they are (GNU tar lists them under their own names), the rest compressed; extract gives the source bytes', () => {
    const { src, files } = tree();
    const out = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', out, '--compress', 'lz4', '--quiet'], { env: LIMITS }).status).toBe(0);
    expect(shardkit(['verify', out], { env: LIMITS }).status).toBe(0);
    const target = path.join(tmpDir(), 'x');
    expect(shardkit(['extract', out, target], { env: LIMITS }).status).toBe(0);
    for (const [rel, bytes] of files) expect(fs.readFileSync(path.join(target, rel)).equals(bytes), rel).toBe(true);
    hasTool('tar');
    const listed = fs.readdirSync(out).filter((f) => f.endsWith('.tar')).flatMap((s) => run('tar', ['-tf', path.join(out, s)]).split('\n').filter(Boolean));
    expect(listed).toContain('d/big.bin');
    expect(listed).toContain('d/zero.bin');
  });

  it('big_member_killed_while_streamed: no manifest, and --resume gives the bytes of an uninterrupted pack', () => {
    const { src } = tree();
    const out = path.join(tmpDir(), 'ds');
    const args = ['pack', src, '--out', out, '--shard', '1MiB', '--quiet'];
    // killed (SIGKILL) after the first piece of the first streamed file is in its shard
    const killed = shardkit(args, { env: { ...LIMITS, SHARDKIT_CRASH_AT: 'pack:streamed-piece' } });
    expect(killed.status).toBe(-1);
    expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
    const resumed = shardkit([...args, '--resume'], { env: LIMITS });
    expect(resumed.stderr).toBe('');
    expect(resumed.status).toBe(0);
    const ref = path.join(tmpDir(), 'ref');
    expect(shardkit(['pack', src, '--out', ref, '--shard', '1MiB', '--quiet']).status).toBe(0);
    const files = (dir: string): string[] => fs.readdirSync(dir).filter((f) => /\.(tar|skidx)$/.test(f) || f === 'manifest.json').sort();
    expect(files(out)).toEqual(files(ref));
    for (const f of files(ref)) expect(fs.readFileSync(path.join(out, f)).equals(fs.readFileSync(path.join(ref, f))), f).toBe(true);
  });
});
