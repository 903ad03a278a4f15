import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { rawFileFacts, type SampleList } from '../../src/bench/dataset-facts.js';
import { tmpDir } from '../helpers/tmp.js';

const list: SampleList = { keys: ['cat/1', 'cat/2'], exts: [['jpg', 'cls'], ['jpg', 'cls']], sampleBytes: [4, 4], shardSizes: [2] };

describe('rawFileFacts', () => {
  const raw = tmpDir();
  fs.mkdirSync(path.join(raw, 'cat'));
  for (const key of ['1', '2']) fs.writeFileSync(path.join(raw, 'cat', `${key}.jpg`), 'abc');

  it('counts the raw files of every member', () => {
    const both = tmpDir();
    fs.cpSync(raw, both, { recursive: true });
    for (const key of ['1', '2']) fs.writeFileSync(path.join(both, 'cat', `${key}.cls`), '7');
    expect(rawFileFacts(both, list)).toMatchObject({ files: 4, bytes: 8 });
  });

  it('a member missing from the raw files: the wrong source, or a dataset made with passes that added it', () => {
    const file = path.join(raw, 'cat', '1.cls');
    expect(() => rawFileFacts(raw, list)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INPUT,
        message: `${file} (member "cls" of sample "cat/1") is missing: bench reads the raw files the dataset was packed from; pass that source directory as <raw-dir>`,
      }),
    );
    expect(() => rawFileFacts(raw, list, ['resize', 'tag'])).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INPUT,
        message:
          `${file} (member "cls" of sample "cat/1") is missing: the dataset was made with passes (resize, tag), which changed its members, ` +
          'and bench reads each member from <raw-dir> as key.ext: bench a dataset packed from <raw-dir> without passes (`shardkit pack <raw-dir> --out DIR`)',
      }),
    );
  });
});
