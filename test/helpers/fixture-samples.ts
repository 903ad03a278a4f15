/** Loads the committed image fixtures (fixtures/images) as samples, grouped the way pack groups them. */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Sample } from '../../formats/sample.js';
import { walkSamples } from '../../src/pack/group-samples.js';

export const IMAGE_FIXTURES = fileURLToPath(new URL('../../fixtures/images/', import.meta.url));

export interface FixtureSample {
  sample: Sample;
  /** Source relative path by ext, as pack passes it in PassContext. */
  paths: Record<string, string>;
}

/** Every fixture sample by key (`cat/001`, `dog/004`, `broken/006`, `labels`, ...). */
export async function loadImageFixtures(): Promise<Map<string, FixtureSample>> {
  const out = new Map<string, FixtureSample>();
  for await (const source of walkSamples(IMAGE_FIXTURES)) {
    const members: Record<string, Uint8Array> = {};
    const paths: Record<string, string> = {};
    for (const [i, file] of source.files.entries()) {
      const ext = source.exts[i] as string;
      members[ext] = new Uint8Array(await readFile(file.absPath));
      paths[ext] = file.relPath;
    }
    out.set(source.key, { sample: { key: source.key, members }, paths });
  }
  return out;
}
