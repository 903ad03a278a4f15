import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/**
 * The most bytes one read or write call is given: Node's fs.read and fs.write (and writeFileSync) take under 2 GiB a
 * call, and a member or source file may be larger, so larger transfers go in pieces of this.
 */
export const MAX_IO_CALL_BYTES = 1 << 30;

/**
 * Option checks for the io layer, with sharp-style messages: "Expected integer between 1 and 16384 for maxOpen
 * but received 0.5 of type number". Validation happens once, in constructors, never per read.
 */
export function expectIntegerInRange(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected integer between ${min} and ${max} for ${name} but received ${String(value)} of type ${typeof value}`,
    );
  }
  return value;
}

export function expectBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected boolean for ${name} but received ${String(value)} of type ${typeof value}`);
  }
  return value;
}

/** Checks a byte range given to a read: a non-negative safe integer offset and length (64-bit files welcome). */
export function expectByteRange(name: string, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected non-negative integer for offset but received ${String(offset)} of type ${typeof offset} (${name})`,
      { file: name },
    );
  }
  if (!Number.isSafeInteger(length) || length < 0 || !Number.isSafeInteger(offset + length)) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `Expected non-negative integer for length but received ${String(length)} of type ${typeof length} (${name})`,
      { file: name },
    );
  }
}
