/** Argument parsers shared by commands: each validates and fails with INVALID_ARG (exit 2). */
import fs from 'node:fs';
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

/** `--header`, for commands that read a dataset: collected as given, parsed by {@link httpHeaders}. */
export const HEADER_FLAGS = '-H, --header <header>';
export const HEADER_HELP = 'HTTP request header for a remote dataset, "Name: value", or @FILE with one per line (keeps tokens out of ps); repeatable';

/** openDataset's and verifyDataset's `http` option from `--header` values (none given: no option). */
export function httpOption(values: readonly string[] | undefined): { http?: { headers: Record<string, string> } } {
  return values === undefined || values.length === 0 ? {} : { http: { headers: httpHeaders(values, (file) => fs.readFileSync(file, 'utf8')) } };
}

/** Commander's collector for a repeatable option. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** RFC 9110 field names: a token. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The request headers of `--header` values: each "Name: value", or "@FILE" naming a file of such lines (blank lines
 * and lines starting with # ignored). A malformed header, or a value with a control character (a header could be
 * smuggled in with CR LF), is INVALID_ARG; a file that cannot be read too. Error messages never quote a value.
 */
export function httpHeaders(values: readonly string[] | undefined, readFile: (file: string) => string): Record<string, string> {
  const headers: Record<string, string> = {};
  const add = (line: string, where: string): void => {
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : line.slice(0, colon).trim();
    const value = colon < 0 ? '' : line.slice(colon + 1).trim();
    if (!FIELD_NAME.test(name)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a header like "Name: value" for --header${where} but received no valid name before ":"`);
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `The value of header ${name}${where} holds a control character`);
    headers[name] = value;
  };
  for (const v of values ?? []) {
    if (!v.startsWith('@')) {
      add(v, '');
      continue;
    }
    const file = v.slice(1);
    let text: string;
    try {
      text = readFile(file);
    } catch (err) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Cannot read the headers file ${file}: ${(err as Error).message}`, { file });
    }
    text.split(/\r?\n/).forEach((line, i) => {
      if (line.trim() !== '' && !line.trimStart().startsWith('#')) add(line, ` (${file}:${i + 1})`);
    });
  }
  return headers;
}
