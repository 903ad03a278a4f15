/** Source trees of plain files for the e2e tests of pack, merge and derive, and a sample read back. */
import fs from 'node:fs';
import path from 'node:path';
import type { Sample } from '../../formats/sample.js';
import { openDataset } from '../../src/read/dataset.js';
import { tmpDir } from './tmp.js';

/** A source tree of n deterministic files (several per sample), big enough that packing takes a moment. */
export function makeBinTree(n: number, size = 4000): string {
  const dir = tmpDir();
  for (let i = 0; i < n; i++) {
    const sub = path.join(dir, `c${i % 7}`);
    fs.mkdirSync(sub, { recursive: true });
    const body = Buffer.alloc(size + (i % 97) * 31, i % 251);
    fs.writeFileSync(path.join(sub, `s${String(i).padStart(6, '0')}.bin`), body);
    if (i % 3 === 0) fs.writeFileSync(path.join(sub, `s${String(i).padStart(6, '0')}.cls`), String(i % 7));
  }
  return dir;
}

/** One sample of the dataset in `dir`, read through a dataset opened and closed for it. */
export async function sampleOf(dir: string, key: string): Promise<Sample> {
  const ds = await openDataset(dir);
  try {
    return await ds.get(key);
  } finally {
    await ds.close();
  }
}
