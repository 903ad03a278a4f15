import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { pack } from '../../src/pack/pack.js';
import { tmpDir } from '../helpers/tmp.js';

function tree(files: Record<string, string>): string {
  const root = tmpDir();
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

describe('pack of a source with nothing to pack', () => {
  it('refuses an empty source with INPUT before writing anything', async () => {
    const src = tmpDir();
    fs.mkdirSync(path.join(src, 'empty', 'deeper'), { recursive: true });
    const out = path.join(tmpDir(), 'ds');
    await expect(pack({ source: src, out })).rejects.toMatchObject({ code: ErrorCodes.INPUT, message: `no files to pack under ${src}: ${src} holds no files` });
    expect(fs.existsSync(out)).toBe(false);
  });

  it('says what the walk left out and which option lets it in', async () => {
    const src = tree({ '.cache/a.jpg': 'x', 'b.txt': 'y', 'c.txt': 'z' });
    fs.symlinkSync(path.join(src, 'b.txt'), path.join(src, 'link.txt'));
    await expect(pack({ source: src, out: path.join(tmpDir(), 'ds'), exclude: ['*.txt'] })).rejects.toMatchObject({
      code: ErrorCodes.INPUT,
      message: `no files to pack under ${src}: the walk left out 1 hidden (--include-hidden takes them), 2 left out by --include/--exclude, 1 symbolic link (--follow-symlinks follows them)`,
    });
  });

  it('packs a part that comes out empty: another part has the files', async () => {
    const src = tree({ 'only.txt': 'x' });
    const results = await Promise.all([0, 1].map((index) => pack({ source: src, out: path.join(tmpDir(), `p${index}`), part: { index, count: 2 }, readThreads: 0 })));
    expect(results.map((r) => r.manifest.totals.samples).sort()).toEqual([0, 1]);
  });
});
