/**
 * cli/README.md is the reference for every command and option: each long option the built CLI accepts must be
 * documented there, so an option added without a word in the reference fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, USAGE_ERROR_CODES } from '../../formats/errors.js';
import { ROOT, shardkit } from '../helpers/cli.js';

const reference = fs.readFileSync(path.join(ROOT, 'cli/README.md'), 'utf8');

function commands(): string[] {
  const help = shardkit(['--help']).stdout;
  const list = help.slice(help.indexOf('Commands:'));
  return [...list.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
}

describe('cli/README.md', () => {
  it('documents every command and every long option of each', () => {
    const names = commands();
    expect(names.length).toBeGreaterThan(10);
    const missing: string[] = [];
    let checked = 0;
    for (const name of names) {
      if (!reference.includes(`shardkit ${name}`)) missing.push(name);
      const help = shardkit([name, '--help']).stdout;
      for (const m of help.matchAll(/^ {2}(?:-\w, )?(--[a-z][a-z-]*)/gm)) {
        checked++;
        if (m[1] !== '--help' && !reference.includes(m[1]!)) missing.push(`${name} ${m[1]}`);
      }
    }
    expect(checked).toBeGreaterThan(60); // the help parser found the options
    expect(missing).toEqual([]);
  });

  it('lists every error code once, with the exit code the CLI gives it', () => {
    const section = reference.slice(reference.indexOf('## Errors and exit codes'));
    const rows = [...section.matchAll(/^\| `(SHARDKIT_ERR_[A-Z_]+)` \| (\d) \|/gm)].map((m) => [m[1]!, Number(m[2])] as const);
    const expected = Object.values(ErrorCodes).map((code) => [code, USAGE_ERROR_CODES.has(code) ? 2 : 1] as const);
    expect([...rows].sort()).toEqual([...expected].sort());
  });
});
