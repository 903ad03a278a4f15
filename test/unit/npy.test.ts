import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { decodeNpy, encodeNpy } from '../../src/passes/npy.js';
import { makeTempDir, removeTree } from '../helpers/source-tree.js';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const ascii = (text: string): string => Buffer.from(text, 'latin1').toString('hex');

describe('encodeNpy', () => {
  it('writes the exact v1.0 bytes for a 1-d float32 array', () => {
    const dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"; // 57 chars
    const growth = ' '.repeat(20); // numpy's room for the first axis: 21 digits minus len("2")
    const pad = ' '.repeat(40); // 10 + 57 + 20 + 40 + 1 = 128, a multiple of 64
    const expected =
      '93' + ascii('NUMPY') + '0100' + '7600' + ascii(dict + growth + pad + '\n') + '0000803f' + '000020c0'; // 1.0, -2.5 LE
    expect(hex(encodeNpy({ shape: [2], data: Float32Array.of(1, -2.5) }))).toBe(expected);
  });

  it('aligns the data to 64 bytes for every shape', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5000 }), { maxLength: 5 }), (dims) => {
        const shape = dims.map((d, i) => (i === 0 ? d : d % 4));
        const count = shape.reduce((a, b) => a * b, 1);
        const bytes = encodeNpy({ shape, data: new Float32Array(count) });
        const headerLength = (bytes[8] as number) | ((bytes[9] as number) << 8);
        expect((10 + headerLength) % 64).toBe(0);
        expect(bytes[10 + headerLength - 1]).toBe(0x0a);
        expect(bytes.length).toBe(10 + headerLength + count * 4);
      }),
    );
  });

  it('round-trips through decodeNpy', () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true }), { maxLength: 60 }), (values) => {
        const data = Float32Array.from(values);
        const decoded = decodeNpy(encodeNpy({ shape: [1, data.length], data }));
        expect(decoded.shape).toEqual([1, data.length]);
        expect(Array.from(decoded.data)).toEqual(Array.from(data));
      }),
    );
  });

  it('rejects a shape that does not match the data', () => {
    expect(() => encodeNpy({ shape: [3, 2], data: new Float32Array(5) })).toThrow(/holds 6 values but the data has 5/);
    expect(() => encodeNpy({ shape: [-1], data: new Float32Array(0) })).toThrow(/non-negative integer/);
  });
});

describe('decodeNpy', () => {
  it.each([
    ['bad magic', new Uint8Array(16)],
    ['too short', Uint8Array.of(0x93, 0x4e)],
  ])('rejects %s', (_why, bytes) => {
    expect(() => decodeNpy(bytes, 'x.npy')).toThrow(/x\.npy is not a float32 \.npy/);
  });

  it('rejects truncated data and other dtypes', () => {
    const good = encodeNpy({ shape: [2], data: Float32Array.of(1, 2) });
    expect(() => decodeNpy(good.subarray(0, good.length - 1))).toThrow(/expected 8 data bytes for shape \(2\) but found 7/);
    expect(() => decodeNpy(good.subarray(0, 20))).toThrow(/truncated header/);
    let error: unknown;
    try {
      decodeNpy(good.subarray(0, good.length - 1));
    } catch (e) {
      error = e;
    }
    expect(isShardkitError(error, ErrorCodes.INPUT)).toBe(true);
    const f8 = Buffer.from(good);
    f8.write("'<f8'", f8.indexOf("'<f4'"), 'latin1');
    expect(() => decodeNpy(f8)).toThrow(/dtype <f8/);
  });
});

const hasNumpy = spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!hasNumpy)('numpy compatibility', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await makeTempDir('shardkit-npy-');
  });
  afterAll(async () => {
    await removeTree(dir);
  });

  it('numpy.load reads our files, and numpy.save writes the same bytes', () => {
    const data = Float32Array.from({ length: 3 * 4 * 5 }, (_, i) => i / 7 - 3);
    const ours = encodeNpy({ shape: [3, 4, 5], data });
    writeFileSync(join(dir, 'ours.npy'), ours);
    const script = `
import numpy as np, sys
a = np.load(sys.argv[1])
assert a.dtype == np.dtype('<f4') and a.shape == (3, 4, 5), (a.dtype, a.shape)
expected = (np.arange(60, dtype=np.float64) / 7 - 3).astype('<f4').reshape(3, 4, 5)
assert np.array_equal(a, expected)
np.save(sys.argv[2], expected)
`;
    execFileSync('python3', ['-c', script, join(dir, 'ours.npy'), join(dir, 'theirs.npy')]);
    expect(hex(readFileSync(join(dir, 'theirs.npy')))).toBe(hex(ours));
    const back = decodeNpy(readFileSync(join(dir, 'theirs.npy')));
    expect(back.shape).toEqual([3, 4, 5]);
  });
});
