/**
 * The path key rule: key = the relative path without its last extension. Over random names (dots, digits, several
 * per stem) the walk groups them into samples in key order, each file exactly once, and key.ext gives back its name.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../../formats/key-order.js';
import { memberPath, splitKey } from '../../formats/sample.js';
import { walkSamples } from '../../src/pack/group-samples.js';
import { collect } from '../helpers/source-tree.js';
import { tmpDir } from '../helpers/tmp.js';

const part = fc.stringMatching(/^[a-c0-9_-]{1,3}$/);
// names like dog.0.jpg, a.b, x (no dot), 1.2.3.txt; never a leading or trailing dot
const nameArb = fc.array(part, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));
const relPathArb = fc.tuple(fc.constantFrom('', 'd/', 'd.e/', 'd/f/'), nameArb).map(([dir, name]) => `${dir}${name}`);

describe('key rule path', () => {
  it('splitKey cuts at the last dot of the basename, and memberPath undoes it', () => {
    fc.assert(
      fc.property(relPathArb, (rel) => {
        const { key, ext } = splitKey(rel, 'path');
        expect(memberPath(key, ext)).toBe(rel);
        const base = rel.slice(rel.lastIndexOf('/') + 1);
        expect(ext).toBe(base.includes('.') ? base.slice(base.lastIndexOf('.') + 1) : '');
        expect(ext.includes('.')).toBe(false);
      }),
    );
  });

  it('the walk yields every file once, grouped by key, keys ascending in byte order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(relPathArb, { minLength: 1, maxLength: 25 }), async (rels) => {
        // a file and a directory cannot share a name: keep the first of such pairs
        const files = rels.filter((r) => !rels.some((o) => o !== r && (o.startsWith(`${r}/`) || r.startsWith(`${o}/`))));
        const root = tmpDir();
        for (const rel of files) {
          fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
          fs.writeFileSync(path.join(root, rel), rel);
        }
        const samples = await collect(walkSamples(root, { keyRule: 'path', stat: false }));
        const seen = samples.flatMap((s) => s.exts.map((ext) => memberPath(s.key, ext)));
        expect([...seen].sort()).toEqual([...files].sort());
        for (const s of samples) for (const ext of s.exts) expect(splitKey(memberPath(s.key, ext), 'path')).toEqual({ key: s.key, ext });
        for (let i = 1; i < samples.length; i++) expect(compareKeys(samples[i - 1]!.key, samples[i]!.key)).toBeLessThan(0);
        fs.rmSync(root, { recursive: true, force: true });
      }),
      { numRuns: 40 },
    );
  });
});
