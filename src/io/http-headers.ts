/** HTTP request headers given as text (the command line's `--header`), checked before any request carries them. */
import fs from 'node:fs';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from './location.js';

/** RFC 9110 field names: a token. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Request headers from strings such as the command line's `--header` values: each "Name: value", or "@FILE" naming a
 * file of such lines (blank lines and lines starting with # ignored), which keeps a token out of the process list. A
 * malformed header, or a value with a control character (a header could be smuggled in with CR LF), is INVALID_ARG;
 * a file that cannot be read too. Error messages never quote a value.
 */
export function httpHeaders(values: readonly string[] | undefined, readFile: (file: string) => string = (file) => fs.readFileSync(file, 'utf8')): Record<string, string> {
  const headers: Record<string, string> = {};
  const add = (line: string, where: string): void => {
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : line.slice(0, colon).trim();
    const value = colon < 0 ? '' : line.slice(colon + 1).trim();
    if (!FIELD_NAME.test(name)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a header like "Name: value"${where} but received no valid name before ":"`);
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `The value of header ${name}${where} holds a control character`);
    headers[name] = value;
  };
  for (const v of values ?? []) {
    if (!v.startsWith('@')) {
      add(v, '');
      continue;
    }
    const file = expectLocalPath('-H @FILE', v.slice(1));
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
