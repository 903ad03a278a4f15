/** cli/prestart.ts: how many reader threads `shardkit pack` gets started before the rest of the CLI loads. */
import { describe, expect, it } from 'vitest';
import { readersWanted } from '../../cli/prestart.js';
import { initialReadThreads } from '../../src/pack/reader-start.js';

describe('readersWanted', () => {
  it('gives what pack will use: the default, --read-threads N or =N; nothing for other commands or bad values', () => {
    expect(readersWanted(['pack', 'src'])).toBe(initialReadThreads());
    expect(readersWanted(['--debug', 'pack', 'src'])).toBe(initialReadThreads());
    expect(readersWanted(['pack', 'src', '--read-threads', '1'])).toBe(1);
    expect(readersWanted(['pack', '--read-threads=3', 'src'])).toBe(3);
    expect(readersWanted(['pack', 'src', '--read-threads', '0'])).toBe(0);
    expect(readersWanted(['pack', 'src', '--read-threads', 'x'])).toBeUndefined();
    expect(readersWanted(['pack', 'src', '--read-threads', '-1'])).toBeUndefined();
    expect(readersWanted(['pack', 'src', '--read-threads'])).toBeUndefined();
    expect(readersWanted(['ls', 'ds'])).toBeUndefined();
    expect(readersWanted(['--version'])).toBeUndefined();
    expect(readersWanted([])).toBeUndefined();
  });
});
