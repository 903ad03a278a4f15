import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/**
 * Option checks at the bench/synth boundary, worded like sharp's:
 * "Expected integer between 1 and 16384 for width but received 0.5 of type number".
 */

function received(value: unknown): string {
  const shown = typeof value === 'string' ? `'${value}'` : String(value);
  return `${shown} of type ${value === null ? 'null' : typeof value}`;
}

export function invalidOption(expected: string, name: string, value: unknown): ShardkitError {
  return new ShardkitError(ErrorCodes.INVALID_ARG, `Expected ${expected} for ${name} but received ${received(value)}`);
}

export function expectInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidOption(`integer between ${min} and ${max}`, name, value);
  }
  return value;
}


export function expectOneOf<T extends string>(name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidOption(`one of ${allowed.join(', ')}`, name, value);
  }
  return value as T;
}

export function expectString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw invalidOption('non-empty string', name, value);
  return value;
}
