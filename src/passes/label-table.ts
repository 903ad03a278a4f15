/**
 * Label tables for `tag=FILE.csv|FILE.json`: rows of fields, each row found by a sample key or a member's source
 * relative path. The rules:
 *
 * CSV (RFC 4180, UTF-8, header row required): the first column holds the key or path (its header name is free);
 * the other columns are the row's fields, as strings.
 *
 * JSON, either form:
 * - an object keyed by key/path: `{"cat/001.jpg": "cat"}` (a string or number value is the row's `label`) or
 *   `{"cat/001": {"label": 3, "bbox": [1, 2, 3, 4]}}` (an object value is the row's fields);
 * - an array of objects, each with a string `key` or `path` field (not both) naming the row; the other fields
 *   are the row's fields, with their JSON types.
 *
 * Mode: when every row has exactly one field and it is named `label`, `class` or `cls` (case-insensitive; CSV:
 * exactly two columns), the table is in `cls` mode: the pass writes member `cls`. Labels that are all
 * non-negative decimal integers are used as class indices; otherwise every label is a class name, the classes
 * are the sorted (byte order) unique names and `cls` holds the index. Any other table is in `json` mode: member
 * `json` holds the row's fields as a JSON object, in the table's field order.
 *
 * Ids are matched as written, except that a leading `./` is removed. A table without rows, duplicate ids (a JSON
 * object's names included), rows that name one sample (its key, or paths of its members) with different fields,
 * empty ids, rows with the wrong number of CSV fields and empty labels are errors that
 * name the file and row.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import { splitKey } from '../../formats/sample.js';
import { parseCsv } from './csv.js';

export type LabelTableMode = 'cls' | 'json';

export interface LabelTable {
  mode: LabelTableMode;
  /** Row fields by key or path. */
  rows: Map<string, Record<string, unknown>>;
  /** cls mode: the class index of each row, by key or path. */
  classIndex?: Map<string, number>;
  /** cls mode with class names: the names in index order. */
  classes?: string[];
}

const LABEL_FIELDS = new Set(['label', 'class', 'cls']);

function tableError(file: string, message: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: ${message}`, { file });
}

/** Normalises an id as written in a table: a leading `./` does not change the path it names. */
export function normalizeTableId(id: string): string {
  let out = id;
  while (out.startsWith('./')) out = out.slice(2);
  return out;
}

/** Parses a CSV label table (see the module comment for the rules). */
export function parseCsvLabelTable(text: string, file: string): LabelTable {
  const [header, ...records] = parseCsv(text, file);
  if (header === undefined) throw tableError(file, 'the table is empty; expected a header row such as "path,label"');
  if (header.length < 2) throw tableError(file, `expected a header with the path/key column and at least one more column but received ${JSON.stringify(header.join(','))}`);
  const names = header.slice(1);
  if (new Set(names).size !== names.length) throw tableError(file, `column names repeat in the header ${JSON.stringify(header.join(','))}`);
  const rows = new Map<string, Record<string, unknown>>();
  const bySample: SampleRows = new Map();
  records.forEach((record, i) => {
    const where = `data row ${i + 1}`;
    if (record.length !== header.length) throw tableError(file, `${where} has ${record.length} fields, expected ${header.length} like the header`);
    // no prototype: a column named __proto__ is a field like any other, not the object's prototype
    const fields: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    names.forEach((name, c) => {
      fields[name] = record[c + 1];
    });
    addRow(rows, bySample, record[0] as string, fields, file, where);
  });
  return finishTable(rows, file);
}

/** Parses a JSON label table (see the module comment for the rules). */
export function parseJsonLabelTable(text: string, file: string): LabelTable {
  let doc: unknown;
  try {
    doc = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: not valid JSON: ${(err as Error).message}`, { file, cause: err });
  }
  const rows = new Map<string, Record<string, unknown>>();
  const bySample: SampleRows = new Map();
  if (Array.isArray(doc)) {
    doc.forEach((item: unknown, i) => {
      const where = `element ${i}`;
      if (!isPlainObject(item)) throw tableError(file, `${where} is not an object; expected {"key": ..., fields...} or {"path": ..., fields...}`);
      const { key, path, ...fields } = item;
      if ((key === undefined) === (path === undefined)) throw tableError(file, `${where} needs exactly one of "key" and "path"`);
      const id = key ?? path;
      if (typeof id !== 'string') throw tableError(file, `${where}: "key"/"path" must be a string`);
      addRow(rows, bySample, id, fields, file, where);
    });
  } else if (isPlainObject(doc)) {
    // JSON.parse keeps the last of two equal names, silently
    const twice = repeatedTopLevelName(text);
    if (twice !== undefined) throw tableError(file, `entry ${JSON.stringify(twice)} appears twice`);
    for (const [id, value] of Object.entries(doc)) {
      const where = `entry ${JSON.stringify(id)}`;
      if (isPlainObject(value)) addRow(rows, bySample, id, value, file, where);
      else if (typeof value === 'string' || typeof value === 'number') addRow(rows, bySample, id, { label: value }, file, where);
      else throw tableError(file, `${where}: expected an object of fields, a string or a number as its value`);
    }
  } else {
    throw tableError(file, 'expected an object keyed by key/path or an array of objects');
  }
  return finishTable(rows, file);
}

/**
 * The first name that occurs twice among the top-level object's names in JSON `text` (already known to be valid
 * JSON), or undefined. Scans the text: strings and nesting depth only.
 */
function repeatedTopLevelName(text: string): string | undefined {
  const seen = new Set<string>();
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
    else if (ch === '"') {
      const start = i;
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      if (depth !== 1) continue;
      // at depth 1 of an object, a string followed by ':' is a name
      let j = i + 1;
      while (/\s/.test(text[j] ?? '')) j++;
      if (text[j] !== ':') continue;
      const name = JSON.parse(text.slice(start, i + 1)) as string;
      if (seen.has(name)) return name;
      seen.add(name);
    }
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first row seen for each sample key, to find a second row that labels that sample otherwise. */
type SampleRows = Map<string, { id: string; where: string; fields: string }>;

function addRow(rows: Map<string, Record<string, unknown>>, bySample: SampleRows, rawId: string, fields: Record<string, unknown>, file: string, where: string): void {
  const id = normalizeTableId(rawId);
  if (id === '') throw tableError(file, `${where} has an empty key/path`);
  if (rows.has(id)) throw tableError(file, `${where}: ${JSON.stringify(id)} appears twice`);
  rows.set(id, fields);
  // `c00/s0.txt,cat` and `c00/s0.json,dog` name two members of one sample: which row won was the pass's choice, silent
  const { key } = splitKey(id);
  const text = JSON.stringify(fields);
  const first = bySample.get(key);
  if (first === undefined) bySample.set(key, { id, where, fields: text });
  else if (first.fields !== text) {
    throw tableError(
      file,
      `${first.where} (${JSON.stringify(first.id)}: ${first.fields}) and ${where} (${JSON.stringify(id)}: ${text}) give sample ${JSON.stringify(key)} two different rows; keep one row per sample, or give its rows the same fields`,
    );
  }
}

function labelFieldOf(fields: Record<string, unknown>): string | undefined {
  const names = Object.keys(fields);
  return names.length === 1 && LABEL_FIELDS.has((names[0] as string).toLowerCase()) ? names[0] : undefined;
}

/** Decides the mode and, for cls mode, the class index of every row. */
function finishTable(rows: Map<string, Record<string, unknown>>, file: string): LabelTable {
  // a table that labels nothing is a mistake (a wrong file, or line ends not understood), not a pack with no labels
  if (rows.size === 0) throw tableError(file, 'the table has no rows; expected one row per sample to label');
  const labelFields = new Set<string | undefined>([...rows.values()].map(labelFieldOf));
  const labelField = labelFields.size === 1 ? [...labelFields][0] : undefined;
  if (labelField === undefined) return { mode: 'json', rows };

  const labels = new Map<string, string | number>();
  for (const [id, fields] of rows) {
    const label = fields[labelField];
    if (!((typeof label === 'string' && label !== '') || typeof label === 'number')) {
      throw tableError(file, `${JSON.stringify(id)} has an empty or non-text ${labelField}; expected a class name or index`);
    }
    labels.set(id, label);
  }
  // integer labels are class indexes as they are, a negative one too (-1 is the usual "ignore" label): read as names,
  // one -1 would renumber every class by the byte order of the names (10 before 2)
  const isIndex = (v: string | number): boolean =>
    typeof v === 'number' ? Number.isSafeInteger(v) : /^-?\d+$/.test(v) && Number.isSafeInteger(Number(v));
  const classIndex = new Map<string, number>();
  if ([...labels.values()].every(isIndex)) {
    for (const [id, label] of labels) classIndex.set(id, Number(label));
    return { mode: 'cls', rows, classIndex };
  }
  const classes = [...new Set([...labels.values()].map(String))].sort(compareKeys);
  const indexOf = new Map(classes.map((name, i) => [name, i]));
  for (const [id, label] of labels) classIndex.set(id, indexOf.get(String(label)) as number);
  return { mode: 'cls', rows, classIndex, classes };
}
