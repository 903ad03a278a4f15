/**
 * append(pack(A), B) holds the same samples as pack(A ∪ B), in every layout, with any split of the files between
 * the pack and one or two appends (tag=dirname's class numbers aside: an append keeps the old ones and adds new
 * classes at the end, so the class names must agree, not the numbers).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { append } from '../../src/pack/append.js';
import { pack } from '../../src/pack/pack.js';
import { tagDirnamePass } from '../../src/passes/tag-dirname.js';
import { openDataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const name = fc.stringMatching(/^[a-z0-9_-]{1,6}$/);
const file = fc.record({ dir: fc.constantFrom('', 'a/', 'b/', 'a/c/', 'z/'), base: name, ext: fc.constantFrom('jpg', 'txt', 'seg.png', 'cls.x'), bytes: fc.uint8Array({ maxLength: 300 }) });

function write(root: string, files: { rel: string; bytes: Uint8Array }[]): string {
  fs.mkdirSync(root, { recursive: true });
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(root, f.rel)), { recursive: true });
    fs.writeFileSync(path.join(root, f.rel), f.bytes);
  }
  return root;
}

/** Every sample as key -> ext -> base64, with cls as the class name it stands for. */
async function samplesOf(dir: string): Promise<Record<string, Record<string, string>>> {
  const ds = await openDataset(dir);
  const classes = (ds.manifest.extra.classes as string[] | undefined) ?? [];
  const out: Record<string, Record<string, string>> = {};
  for await (const e of ds.entries()) {
    const s = await ds.read(e);
    out[s.key] = Object.fromEntries(Object.entries(s.members).map(([ext, b]) => [ext, ext === 'cls' && classes.length > 0 ? (classes[Number(new TextDecoder().decode(b))] as string) : Buffer.from(b).toString('base64')]));
  }
  await ds.close();
  return out;
}

describe('append (property)', () => {
  it('append(pack(A), B1, B2) has the samples of pack(A ∪ B1 ∪ B2)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(file, { minLength: 1, maxLength: 30, selector: (f) => `${f.dir}${f.base}` }),
        fc.array(fc.constantFrom(0, 1, 2), { minLength: 30, maxLength: 30 }),
        fc.constantFrom('tar', 'packed'),
        fc.constantFrom('none', 'lz4'),
        fc.boolean(),
        async (raw, groupOf, layout, compress, tag) => {
          // a key's files all go to one group: a key in two groups is a duplicate, refused by design
          // the first file starts the dataset (pack refuses an empty source)
          const files = raw.map((f, i) => ({ rel: `${f.dir}${f.base}.${f.ext}`, bytes: f.bytes, group: i === 0 ? 0 : (groupOf[i] as number) }));
          const root = tmpDir();
          const passes = () => (tag ? [tagDirnamePass()] : []);
          const all = path.join(root, 'all.shards');
          await pack({ source: write(path.join(root, 'all'), files), out: all, layout, compress, shardBytes: 4096, passes: passes(), readThreads: 0 });
          const grown = path.join(root, 'grown.shards');
          await pack({ source: write(path.join(root, 'g0'), files.filter((f) => f.group === 0)), out: grown, layout, compress, shardBytes: 4096, passes: passes(), readThreads: 0 });
          for (const g of [1, 2]) {
            const group = files.filter((f) => f.group === g);
            const source = write(path.join(root, `g${g}`), group);
            if (group.length > 0) await append({ dataset: grown, source, shardBytes: 4096, readThreads: 0 });
            else {
              // an empty source is refused, and the dataset is left as it was, with nothing staged
              const before = fs.readdirSync(grown).sort();
              await expect(append({ dataset: grown, source, shardBytes: 4096, readThreads: 0 })).rejects.toMatchObject({ code: 'SHARDKIT_ERR_INPUT' });
              expect(fs.readdirSync(grown).sort()).toEqual(before);
            }
          }
          expect(await samplesOf(grown)).toEqual(await samplesOf(all));
          const report = await verifyDataset(grown);
          expect(report.problems).toEqual([]);
          expect(report.ok).toBe(true);
        },
      ),
      { numRuns: 15 },
    );
  });
});
