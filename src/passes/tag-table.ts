/** `tag=FILE.csv|FILE.json`: labels or metadata from a table, see label-table.ts for the table rules. */
import { nodeCrypto } from '../lazy-crypto.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from '../io/location.js';
import { memberPath, splitKey } from '../../formats/sample.js';
import { parseCsvLabelTable, parseJsonLabelTable, type LabelTable } from './label-table.js';
import type { Pass } from './pass.js';
import { CLASS_LIST_OUTPUTS, encodeClassList, withoutStaleCls } from './tag-dirname.js';

const encoder = new TextEncoder();

/**
 * A pass that adds member `cls` (cls mode) or `json` (json mode) from the table row of each sample, replacing a
 * member of that name if the sample has one. A sample's row is the one whose id equals, in this order: its key;
 * a member's source relative path (`ctx.paths`, so rows keyed `cat/001.jpg` still match after `format=webp`);
 * a member's current path `key.ext`; the one row whose path has the sample's key (`cat/001.jpg` for key `cat/001`:
 * derive over a dataset whose members a format pass renamed sees only `cat/001.webp`; rows that share a key have
 * the same fields, or the table was refused). A sample without a row is counted in stats().untagged and passes through, except
 * in cls mode a `cls` member it already had (from an earlier tag pass, in a derive): that indexed another class
 * list, which this pass replaces, so it is removed (stats().staleClsRemoved). Rows no sample used are counted in
 * stats().unusedRows.
 * In cls mode with class names, outputs() gives `classes.txt` and the manifest field `classes`.
 * @param params recorded in the manifest (e.g. the table's file name and SHA-256).
 */
export function tagTablePass(table: LabelTable, params: Record<string, unknown> = {}): Pass {
  let tagged = 0;
  let untagged = 0;
  let staleClsRemoved = 0;
  const used = new Set<string>();
  const byKey = rowsByKey(table);
  return {
    name: 'tag',
    params: { ...params, mode: table.mode, rows: table.rows.size },
    // it writes cls, so the class list is its own: with integer labels it writes none, and none may stay from before
    ...(table.mode === 'cls' ? { declares: CLASS_LIST_OUTPUTS } : {}),
    async run(sample, ctx) {
      const id = findRow(table, sample.key, Object.keys(sample.members), ctx.paths) ?? byKey.get(sample.key);
      if (id === undefined) {
        untagged++;
        if (table.mode !== 'cls') return sample;
        const kept = withoutStaleCls(sample);
        if (kept !== sample) staleClsRemoved++;
        return kept;
      }
      tagged++;
      used.add(id);
      const bytes =
        table.mode === 'cls'
          ? encoder.encode(String(table.classIndex?.get(id)))
          : encoder.encode(JSON.stringify(table.rows.get(id)));
      const ext = table.mode === 'cls' ? 'cls' : 'json';
      return { key: sample.key, members: { ...sample.members, [ext]: bytes } };
    },
    outputs() {
      if (table.classes === undefined) return {};
      return { files: { 'classes.txt': encodeClassList(table.classes) }, manifest: { classes: table.classes } };
    },
    stats() {
      return { tagged, untagged, staleClsRemoved, unusedRows: table.rows.size - used.size };
    },
  };
}

/**
 * Row ids by the key of their path (`cat/001.jpg` -> `cat/001`): the first row of each key (the table refuses rows
 * of one key with different fields, see label-table.ts, so any of them is the row).
 */
function rowsByKey(table: LabelTable): Map<string, string> {
  const out = new Map<string, string>();
  for (const id of table.rows.keys()) {
    const { key } = splitKey(id);
    if (key === id) continue; // an id without extension is a key, matched as such
    if (!out.has(key)) out.set(key, id);
  }
  return out;
}

function findRow(table: LabelTable, key: string, exts: string[], paths: Record<string, string> | undefined): string | undefined {
  if (table.rows.has(key)) return key;
  for (const path of Object.values(paths ?? {})) if (table.rows.has(path)) return path;
  for (const ext of exts) {
    const path = memberPath(key, ext);
    if (table.rows.has(path)) return path;
  }
  return undefined;
}

/**
 * Reads a `.csv` or `.json` label table now (so a bad table fails before packing starts) and returns its pass.
 * The manifest records the file name as given and its SHA-256, never the absolute path.
 * @param file path as the user wrote it, resolved against `cwd`.
 * @throws ShardkitError INVALID_ARG when the file cannot be read, has another extension or breaks the table rules.
 */
export function tagFilePass(file: string, cwd: string): Pass {
  expectLocalPath("tag's table", file);
  const lower = file.toLowerCase();
  const kind = lower.endsWith('.csv') ? 'csv' : lower.endsWith('.json') ? 'json' : undefined;
  if (kind === undefined) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected dirname, FILE.csv or FILE.json for tag but received ${JSON.stringify(file)}`);
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(resolve(cwd, file));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Cannot read label table ${file} (${code}); check the path given to tag=`, { file, cause: err });
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (err) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Label table ${file} is not UTF-8 text`, { file, cause: err });
  }
  const table = kind === 'csv' ? parseCsvLabelTable(text, file) : parseJsonLabelTable(text, file);
  return tagTablePass(table, { source: file, sha256: nodeCrypto().createHash('sha256').update(bytes).digest('hex') });
}
