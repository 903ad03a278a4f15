/**
 * Byte sizes on the command line (`--shard 1GiB`). The units follow GNU coreutils (`dd`, `sort -S`, `df -B`):
 * - `B` or no unit: bytes;
 * - `KB`, `MB`, `GB`, `TB`, `PB`: powers of 1000 (SI, what disk vendors and `100MB` in prose mean);
 * - `KiB`, `MiB`, `GiB`, `TiB`, `PiB` and the bare letters `K`, `M`, `G`, `T`, `P`: powers of 1024.
 * Units are case-insensitive (`512mib` = `512MiB`); a space may separate number and unit. The number may have a
 * fraction (`1.5GiB`); fractions of a byte are dropped, so the result is always an integer.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

const SI = 1000;
const IEC = 1024;

/** Multiplier by lower-cased unit. */
const UNIT_BYTES: ReadonlyMap<string, number> = new Map([
  ['', 1],
  ['b', 1],
  ['kb', SI],
  ['mb', SI ** 2],
  ['gb', SI ** 3],
  ['tb', SI ** 4],
  ['pb', SI ** 5],
  ['k', IEC],
  ['m', IEC ** 2],
  ['g', IEC ** 3],
  ['t', IEC ** 4],
  ['p', IEC ** 5],
  ['kib', IEC],
  ['mib', IEC ** 2],
  ['gib', IEC ** 3],
  ['tib', IEC ** 4],
  ['pib', IEC ** 5],
]);

const SIZE_PATTERN = /^(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)$/i;

export interface SizeLimits {
  /** Smallest accepted size in bytes (default 0). */
  min?: number;
  /** Largest accepted size in bytes (default Number.MAX_SAFE_INTEGER). */
  max?: number;
}

/**
 * Parses a human byte size.
 * @param text what the user typed, e.g. `1GiB`, `512MiB`, `100MB`, `64KB`, `1.5GiB`, `4096`.
 * @param what the option's name for the error message, e.g. `--shard`.
 * @throws ShardkitError INVALID_ARG when `text` is not a size or falls outside `limits`.
 * @example parseSize('512MiB', '--shard') // 536870912
 */
export function parseSize(text: string, what: string, limits: SizeLimits = {}): number {
  const min = limits.min ?? 0;
  const max = limits.max ?? Number.MAX_SAFE_INTEGER;
  const match = SIZE_PATTERN.exec(text.trim());
  const multiplier = match === null ? undefined : UNIT_BYTES.get((match[2] ?? '').toLowerCase());
  if (match === null || multiplier === undefined) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected a size like 4096, 64KiB, 100MB or 1.5GiB for ${what} but received ${JSON.stringify(text)}`,
    );
  }
  const bytes = Math.floor(Number(match[1]) * multiplier);
  if (!Number.isSafeInteger(bytes) || bytes < min || bytes > max) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected a size between ${formatSize(min)} and ${formatSize(max)} for ${what} but received ${JSON.stringify(text)}`,
    );
  }
  return bytes;
}

const FORMAT_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * Formats bytes with binary units and at most two decimals, e.g. `1.5 GiB`, `512 MiB`, `100 B`.
 * The output is accepted by {@link parseSize} (up to the rounding of the decimals).
 */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= IEC && unit < FORMAT_UNITS.length - 1) {
    value /= IEC;
    unit++;
  }
  // Two decimals, trailing zeros dropped: 1.50 -> 1.5, 512.00 -> 512.
  const digits = unit === 0 ? String(Math.round(value)) : String(Number(value.toFixed(2)));
  return `${sign}${digits} ${FORMAT_UNITS[unit]}`;
}
