/** `shardkit extract` through the built CLI: packing then extracting gives back the source tree byte for byte. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTree, shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function makeTree(): string {
  const src = tmpDir();
  for (let i = 0; i < 40; i++) {
    const dir = path.join(src, i % 2 ? 'cat' : 'dog');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.bin`), Buffer.alloc(200 + i * 37, i));
    if (i % 4 === 0) fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.seg.txt`), `label ${i}\n`.repeat(20));
  }
  return src;
}

describe('shardkit extract', () => {
  for (const args of [[], ['--layout', 'packed', '--compress', 'lz4']]) {
    it(`recreates the source tree byte for byte (${args.join(' ') || 'tar'})`, () => {
      const src = makeTree();
      const ds = path.join(tmpDir(), 'ds');
      expect(shardkit(['pack', src, '--out', ds, '--shard', '8KB', ...args]).status).toBe(0);
      const out = tmpDir();
      const r = shardkit(['extract', ds, out]);
      expect(r.status, r.stderr).toBe(0);
      expect(readTree(out)).toEqual(readTree(src));
    });
  }

  it('--prefix extracts only the keys that start with it', () => {
    const src = makeTree();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    expect(shardkit(['extract', ds, out, '--prefix', 'cat/']).status).toBe(0);
    const got = [...readTree(out).keys()];
    expect(got.length).toBe(20);
    expect(got.every((p) => p.startsWith('cat/'))).toBe(true);
  });

  it('refuses to write through a symbolic link already in the target', () => {
    const src = makeTree();
    const ds = path.join(tmpDir(), 'ds');
    expect(shardkit(['pack', src, '--out', ds]).status).toBe(0);
    const out = tmpDir();
    const elsewhere = tmpDir();
    fs.symlinkSync(elsewhere, path.join(out, 'cat'));
    const r = shardkit(['extract', ds, out]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_UNSAFE_PATH: /);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });
});
