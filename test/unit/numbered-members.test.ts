import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { MAX_NUMBERED_MEMBERS, RunGrouper, walkSamples } from '../../src/pack/group-samples.js';
import { pack } from '../../src/pack/pack.js';
import { collect } from '../helpers/source-tree.js';
import { tmpDir } from '../helpers/tmp.js';

function tree(names: string[]): string {
  const root = tmpDir();
  for (const name of names) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), name);
  }
  return root;
}

const kaggle = (stem: string, n: number): string[] => Array.from({ length: n }, (_, i) => `train/${stem}.${i}.jpg`);

describe('Kaggle-style names that WebDataset keys fold into one sample', () => {
  const folded =
    'Source files train/dog.0.jpg, train/dog.1.jpg, train/dog.10.jpg, train/dog.100.jpg and maybe more all get the key train/dog ' +
    '(a WebDataset key ends at the first dot of the name), so they would be packed as one sample with members 0.jpg, 1.jpg, 10.jpg, 100.jpg, ...: ' +
    'pass --key-rule path to key each file by its path without its last extension (train/dog.0.jpg -> key train/dog.0), ' +
    'rename them so that the number comes before the first dot (dog_0.jpg), or, if they are parts of one sample, pass --group-numbered';

  it('stop the walk with INPUT naming the files, the cause and both remedies', async () => {
    const root = tree(kaggle('dog', 250));
    await expect(collect(walkSamples(root))).rejects.toMatchObject({ code: ErrorCodes.INPUT, key: 'train/dog', message: folded });
    const grouper = new RunGrouper();
    const names = kaggle('dog', 250).map((n) => n.slice('train/'.length)).sort();
    expect(() => grouper.group({ absDir: path.join(root, 'train'), relDir: 'train', names })).toThrow(folded);
  });

  it('up to MAX_NUMBERED_MEMBERS numbered members, and any number of other members, still make one sample', async () => {
    const few = kaggle('view', MAX_NUMBERED_MEMBERS);
    const others = ['train/x.cls', 'train/x.jpg', 'train/x.json', 'train/x.seg.png', 'train/x.txt', 'train/x.depth.png'];
    const samples = await collect(walkSamples(tree([...few, ...others])));
    expect(samples.map((s) => [s.key, s.exts.length])).toEqual([
      ['train/view', MAX_NUMBERED_MEMBERS],
      ['train/x', others.length],
    ]);
    await expect(collect(walkSamples(tree(kaggle('view', MAX_NUMBERED_MEMBERS + 1))))).rejects.toMatchObject({ code: ErrorCodes.INPUT });
  });

  it('pack stops on them (whatever onError says), and groupNumbered keeps WebDataset grouping', async () => {
    const root = tree([...kaggle('cat', 12), ...kaggle('dog', 12)]);
    const out = path.join(tmpDir(), 'ds');
    for (const onError of ['fail', 'skip'] as const) {
      await expect(pack({ source: root, out, onError, readThreads: 0, force: true })).rejects.toMatchObject({
        code: ErrorCodes.INPUT,
        message: expect.stringContaining('all get the key train/cat'),
      });
    }
    const r = await pack({ source: root, out, groupNumbered: true, readThreads: 0, force: true });
    expect(r.manifest.totals).toMatchObject({ samples: 2, members: 24 });
  });
});
