/**
 * The floor rows of bench/read.mjs: getSync's copy alone (the bound of any copying read), and atViewSync's copy alone
 * (the bound of the reads into a reused buffer).
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDataset } from '../dist/src/read/dataset.js';
import { nativeAddon } from '../dist/src/native/native.js';
import { ReadArena } from '../dist/src/read/read-arena.js';

/**
 * The "owned-copy floor": sample i's member bytes copied out of the mapped shard with CRC32C, by the native copy
 * getSync makes, into a buffer from the read arena getSync uses; no index lookup, no decoding, no sample object. No
 * copying read can beat it, so readFileSync / floor is the most a copying getSync or atSync can reach here, and
 * floor / getSync shows how close getSync comes. `readView` is the "view-copy floor": the same copies into one buffer
 * used again for every sample, as atViewSync's view buffer is. Undefined without the native addon.
 */
export async function ownedCopyFloor(ds, dir) {
  const addon = nativeAddon();
  if (addon === undefined || !ds.native) return undefined;
  const shard = [];
  const offset = [];
  const length = [];
  const first = []; // position i's members are entries first[i] .. first[i + 1] - 1 of the arrays above
  const own = await openDataset(path.join(dir, 'ds'), { checkShards: 'size' }); // leaves ds's page cache and counters alone
  for await (const e of own.entries()) {
    first.push(shard.length);
    for (const m of e.members) {
      shard.push(e.shard);
      offset.push(e.offset + m.offset);
      length.push(m.storedSize);
    }
  }
  first.push(shard.length);
  await own.close();
  const maps = ds.shards.map((s) => {
    const fd = fs.openSync(path.join(dir, 'ds', s.file), 'r');
    try {
      return addon.map(fd, fs.fstatSync(fd).size, true);
    } finally {
      fs.closeSync(fd);
    }
  });
  const arena = new ReadArena();
  let view = new Uint8Array(1 << 20);
  return {
    readView: (i) => {
      let total = 0;
      for (let j = first[i]; j < first[i + 1]; j++) {
        if (length[j] > view.length) view = new Uint8Array(length[j]);
        addon.copy(maps[shard[j]], offset[j], length[j], view, 0, 0, length[j]);
        total += length[j];
      }
      return total;
    },
    read: (i) => {
      let total = 0;
      for (let j = first[i]; j < first[i + 1]; j++) {
        const bytes = arena.take(length[j]);
        addon.copy(maps[shard[j]], offset[j], length[j], bytes, 0, 0, length[j]);
        total += bytes.length;
      }
      return total;
    },
    close: () => maps.forEach((m) => addon.unmap(m)),
  };
}
