import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { formatSize, parseSize } from '../../src/pack/size-arg.js';

describe('parseSize', () => {
  it.each([
    ['4096', 4096],
    ['0', 0],
    ['100B', 100],
    ['64KB', 64_000],
    ['100MB', 100_000_000],
    ['2GB', 2_000_000_000],
    ['1TB', 1e12],
    ['64KiB', 65_536],
    ['512MiB', 536_870_912],
    ['1GiB', 1_073_741_824],
    ['1.5GiB', 1_610_612_736],
    ['2TiB', 2 * 1024 ** 4],
    ['64K', 65_536],
    ['1M', 1_048_576],
    ['1g', 1_073_741_824],
    ['512mib', 536_870_912],
    ['1 GiB', 1_073_741_824],
    [' 10kb ', 10_000],
    ['.5KiB', 512],
    ['1.0001KiB', 1024],
  ])('%s -> %d', (text, bytes) => {
    expect(parseSize(text, '--shard')).toBe(bytes);
  });

  it.each(['', 'abc', '-1', '1.2.3', '1e9', '10 XB', 'GiB', '1GiBs', '0x10', '1,5GiB'])('rejects %j', (text) => {
    expect(() => parseSize(text, '--shard')).toThrow(/Expected a size like .* for --shard but received/);
    try {
      parseSize(text, '--shard');
    } catch (e) {
      expect(isShardkitError(e, ErrorCodes.INVALID_ARG)).toBe(true);
    }
  });

  it('enforces limits and sizes beyond safe integers', () => {
    expect(() => parseSize('0', '--shard', { min: 1 })).toThrow('Expected a size between 1 B and');
    expect(() => parseSize('2GiB', '--shard', { max: 1024 ** 3 })).toThrow('and 1 GiB for --shard but received "2GiB"');
    expect(() => parseSize('99999PiB', '--shard')).toThrow(/between/);
  });
});

describe('formatSize', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1 KiB'],
    [1536, '1.5 KiB'],
    [536_870_912, '512 MiB'],
    [1_610_612_736, '1.5 GiB'],
    [1_000_000, '976.56 KiB'],
  ])('%d -> %s', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
  });

  it('round-trips through parseSize within the rounding of two decimals', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 52 }), (bytes) => {
        const back = parseSize(formatSize(bytes), 'x');
        expect(Math.abs(back - bytes)).toBeLessThanOrEqual(Math.max(1, bytes * 0.005));
      }),
    );
  });
});
