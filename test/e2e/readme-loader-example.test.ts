/**
 * Runs the README's "Use in a loader" example exactly as printed (its import line aside: `openDataset` comes from the
 * package's public entry, src/index.ts), in a directory holding a small `photos.shards` dataset of JPEG samples.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/index.js';
import { tmpDir } from '../helpers/tmp.js';

/** The README snippet, byte for byte. Keep the two in sync. */
export const README_LOADER_EXAMPLE = `import { openDataset } from 'shardkit';

const ds = await openDataset('photos.shards'); // a dataset directory, or the http(s):// URL of one
const rank = Number(process.env.RANK ?? 0);
const worldSize = Number(process.env.WORLD_SIZE ?? 1);
const options = {
  batchSize: 32,
  shuffle: 'block', // 'none' | 'full' | 'block' (shards permuted, samples mixed inside windows of 4 shards)
  seed: 42,         // order = f(dataset, seed, epoch): the same on every machine, whatever worldSize is
  rank, worldSize,  // each sample goes to exactly one rank; ranks get equal counts
  decode: 'image',  // jpg/png/webp members -> { data, width, height, channels } (raw 8-bit pixels)
};

let checkpoint;
for (let epoch = 0; epoch < 2; epoch++) {
  const loader = ds.loader({ ...options, epoch });
  for await (const batch of loader) {
    for (const { key, members } of batch) {
      const { width, height, channels } = members.jpg;
      console.log(epoch, key, width, height, channels, new TextDecoder().decode(members.cls));
    }
    if (epoch === 1 && loader.stats().batches === 2) {
      checkpoint = JSON.stringify(loader.state()); // small plain JSON: save it with the model
      break;
    }
  }
}

// Later, maybe in another process: the same options plus resumeFrom yield exactly the rest of epoch 1.
const rest = ds.loader({ ...options, epoch: 1, resumeFrom: JSON.parse(checkpoint) });
for await (const batch of rest) console.log('resumed', batch.length);
await ds.close();
`;

const IMPORT_LINE = "import { openDataset } from 'shardkit';\n";

describe('README "Use in a loader"', () => {
  it('runs as printed', async () => {
    const dir = tmpDir();
    const writer = new DatasetWriter({ dir: path.join(dir, 'photos.shards'), shardBytes: 16 * 1024 });
    for (let i = 0; i < 100; i++) {
      const jpg = await sharp({ create: { width: 8 + (i % 5), height: 6, channels: 3, background: { r: i, g: 100, b: 200 } } }).jpeg().toBuffer();
      writer.add({ key: `img/${String(i).padStart(4, '0')}`, members: { cls: new TextEncoder().encode(String(i % 3)), jpg } });
    }
    await writer.finish();

    expect(README_LOADER_EXAMPLE.startsWith(IMPORT_LINE)).toBe(true);
    const body = README_LOADER_EXAMPLE.slice(IMPORT_LINE.length);
    const lines: string[] = [];
    const consoleStub = { log: (...args: unknown[]) => lines.push(args.join(' ')) };
    const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;
    const run = new AsyncFunction('openDataset', 'console', body);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      await run(openDataset, consoleStub);
    } finally {
      process.chdir(cwd);
    }

    const epoch0 = lines.filter((l) => l.startsWith('0 '));
    expect(epoch0.length).toBe(100);
    expect(new Set(epoch0.map((l) => l.split(' ')[1])).size).toBe(100);
    for (const line of epoch0) {
      const [, key, width, height, channels, cls] = line.split(' ');
      const i = Number(key?.slice(4));
      expect([Number(width), Number(height), Number(channels), cls]).toEqual([8 + (i % 5), 6, 3, String(i % 3)]);
    }
    expect(lines.filter((l) => l.startsWith('1 ')).length).toBe(64);
    const resumed = lines.filter((l) => l.startsWith('resumed ')).map((l) => Number(l.split(' ')[1]));
    expect(resumed.reduce((a, b) => a + b, 0)).toBe(36);
  });
});
