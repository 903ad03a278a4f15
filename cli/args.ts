/** Argument parsers shared by commands: each validates and fails with INVALID_ARG (exit 2). */
import { ErrorCodes, ShardkitError } from '../formats/errors.js';

export function parseCount(text: string, what: string, min = 0): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected an integer of at least ${min} for ${what} but received ${JSON.stringify(text)}`);
  }
  return n;
}

export function parseChoice<T extends string>(text: string, what: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(text)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of ${choices.join(', ')} for ${what} but received ${JSON.stringify(text)}`);
  }
  return text as T;
}
