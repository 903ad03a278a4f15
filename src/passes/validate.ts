/** Option checks for passes, with sharp-style messages that say what was expected and what arrived. */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

function received(value: unknown): string {
  return `${typeof value === 'string' ? JSON.stringify(value) : String(value)} of type ${typeof value}`;
}

export function checkInteger(value: unknown, min: number, max: number, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected integer between ${min} and ${max} for ${what} but received ${received(value)}`);
  }
  return value;
}

export function checkOneOf<T extends string>(value: unknown, allowed: readonly T[], what: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of ${allowed.join(', ')} for ${what} but received ${received(value)}`);
  }
  return value as T;
}

/** Parses a decimal integer written by a user ("224"); anything else is left for checkInteger to reject. */
export function parseIntegerText(text: string): number | string {
  return /^\d+$/.test(text) ? Number(text) : text;
}
