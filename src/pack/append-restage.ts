/**
 * With `--on-error skip`, the new samples whose keys the dataset already has are left out. Found while the index is
 * merged, after they were packed: the packed new samples are copied, in order and without them, into `kept/`, so no
 * shard holds bytes the index does not point at (a tar extracted would bring the duplicate back). O(new samples).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes } from '../../formats/errors.js';
import { carriedFiles } from '../../formats/shard-index.js';
import type { Dataset } from '../read/dataset.js';
import type { AppendTarget } from './append-stage.js';
import { DatasetWriter } from './dataset-writer.js';

export async function restageWithout(staged: Dataset, out: string, duplicates: ReadonlySet<string>, target: AppendTarget): Promise<void> {
  const m = staged.manifest;
  const writer = new DatasetWriter({
    dir: out,
    layout: m.layout,
    compress: m.compress,
    pageSize: m.index.pageSize,
    shardBytes: target.shardBytes,
    passes: m.passes,
    firstShard: target.firstShard,
    command: 'append',
    // what a killed copy left is made again from the start
    force: true,
  });
  try {
    for (const s of m.skipped) writer.refuse(s.path, s.reason);
    for await (const entry of staged.entries()) {
      if (duplicates.has(entry.key)) {
        // listed by key: which of its files the walk met first is not recorded
        writer.refuse(entry.key, `${ErrorCodes.DUPLICATE_KEY}: the dataset already has a sample with key ${JSON.stringify(entry.key)}`);
        continue;
      }
      writer.add(await staged.read(entry));
    }
    for (const name of carriedFiles(m.files)) writer.addFile(name, fs.readFileSync(path.join(staged.location, name)), 'the new samples');
    for (const [k, v] of Object.entries(m.extra)) writer.setExtra(k, v);
    await writer.finish();
  } catch (err) {
    writer.abort();
    throw err;
  }
}
