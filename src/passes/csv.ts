/** A small RFC 4180 CSV reader for label tables (no dependency for ~50 lines). */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/**
 * Parses CSV text into rows of fields: `,` separates fields, `"` at the start of a field quotes it (it may then
 * hold commas, line breaks and quotes written `""`), lines end in LF, CRLF or a lone CR (Excel's "CSV (Macintosh)";
 * read as one line, such a file gave a header and no rows). A leading UTF-8 BOM is ignored and
 * blank lines are skipped. A `"` inside an unquoted field is kept as a literal character.
 * @param file named in error messages.
 * @throws ShardkitError INVALID_ARG on an unterminated quote or text after a closing quote.
 */
export function parseCsv(text: string, file: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  const endField = (): void => {
    row.push(field);
    field = '';
  };
  const endRow = (): void => {
    const blank = row.length === 0 && field === '' && !quoted;
    endField();
    if (!blank) rows.push(row);
    row = [];
    quoted = false;
  };
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (i < text.length) {
    const ch = text[i] as string;
    if (ch === '"' && field === '' && !quoted) {
      quoted = true;
      const start = line;
      for (i++; ; i++) {
        if (i >= text.length) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: line ${start}: a quoted field is never closed`);
        const q = text[i] as string;
        if (q === '"' && text[i + 1] === '"') {
          field += '"';
          i++;
        } else if (q === '"') {
          break;
        } else {
          if (q === '\n' || (q === '\r' && text[i + 1] !== '\n')) line++;
          field += q;
        }
      }
      i++;
      const next = text[i];
      if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
        throw new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: line ${line}: text after a closing quote; quote the whole field`);
      }
      continue;
    }
    if (ch === ',') {
      endField();
      quoted = false;
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      endRow();
      line++;
    } else {
      field += ch;
    }
    i++;
  }
  if (field !== '' || row.length > 0 || quoted) endRow();
  return rows;
}
