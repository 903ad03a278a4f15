import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { parseManifest } from '../../formats/manifest.js';

/** A valid manifest of three shards (2 + 3 + 4 samples) with the given appends. */
function manifest(appends: unknown): string {
  const shards = [2, 3, 4].map((samples, i) => ({ file: `shard-00000${i}.tar`, bytes: 10240, samples, crc32c: '00000000' }));
  return JSON.stringify({
    format: 'shardkit-dataset',
    formatVersion: 1,
    tool: { name: 'shardkit', version: '0.1.0' },
    layout: 'tar',
    compress: 'none',
    index: { file: 'index-2.skidx', bytes: 8192, pageSize: 4096, crc32c: '0000abcd' },
    shards,
    totals: { samples: 9, members: 9, bytes: 9, storedBytes: 9, shardBytes: 30720 },
    passes: [],
    files: [],
    skipped: [],
    extra: {},
    ...(appends === undefined ? {} : { appends }),
  });
}

const bad = (appends: unknown, message: RegExp): void => {
  expect(() => parseManifest(manifest(appends), 'm.json')).toThrow(expect.objectContaining({ code: ErrorCodes.BAD_MANIFEST, message: expect.stringMatching(message) }));
};

describe('manifest appends', () => {
  it('accepts records in shard order whose samples are those of their shards', () => {
    const appends = [
      { samples: 3, shards: [1, 2], passes: [] },
      { samples: 0, shards: [2, 2], passes: [] },
      { samples: 4, shards: [2, 3], passes: [{ name: 'tag', params: { source: 'dirname' } }] },
    ];
    expect(parseManifest(manifest(appends), 'm.json').appends).toEqual(appends);
    expect(parseManifest(manifest(undefined), 'm.json').appends).toBeUndefined();
  });

  it('refuses malformed records, ranges out of order or outside the shards, and wrong sample counts', () => {
    bad({}, /^m\.json: appends is not an array$/);
    bad([{ samples: 3, shards: [1], passes: [] }], /^m\.json: appends\[0\] is malformed$/);
    bad([{ samples: 3, shards: [1, 2], passes: [{ name: 1 }] }], /^m\.json: appends\[0\]\.passes is malformed$/);
    bad([{ samples: 4, shards: [2, 4], passes: [] }], /appends\[0\]\.shards is not a range .* within the 3 shards$/);
    bad([{ samples: 0, shards: [2, 1], passes: [] }], /appends\[0\]\.shards is not a range/);
    bad(
      [
        { samples: 4, shards: [2, 3], passes: [] },
        { samples: 3, shards: [1, 2], passes: [] },
      ],
      /appends\[1\]\.shards is not a range of shard numbers after the previous append's/,
    );
    bad([{ samples: 2, shards: [1, 2], passes: [] }], /^m\.json: appends\[0\]\.samples does not equal the samples of its shards \(3\)$/);
  });
});
