import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCsv } from '../../src/passes/csv.js';

describe('parseCsv', () => {
  it('reads quotes, doubled quotes, embedded commas and line breaks, CRLF, a BOM and blank lines', () => {
    const text = '\uFEFFpath,caption\r\n"a.jpg","say ""hi"", then\nleave"\r\n\r\nb.jpg,plain\nc.jpg,""\n';
    expect(parseCsv(text, 't.csv')).toEqual([
      ['path', 'caption'],
      ['a.jpg', 'say "hi", then\nleave'],
      ['b.jpg', 'plain'],
      ['c.jpg', ''],
    ]);
  });

  it('keeps a last line without a line break and a quote inside an unquoted field', () => {
    expect(parseCsv('a,b\nx,5" tall', 't.csv')).toEqual([
      ['a', 'b'],
      ['x', '5" tall'],
    ]);
  });

  it('reports the line of an unterminated quote and text after a closing quote', () => {
    expect(() => parseCsv('a,b\n1,2\n"x,3\n', 't.csv')).toThrow('t.csv: line 3: a quoted field is never closed');
    expect(() => parseCsv('a,b\n"x"y,3\n', 't.csv')).toThrow('t.csv: line 2: text after a closing quote');
  });

  it('ends lines at a lone CR too (Excel\'s "CSV (Macintosh)"), and counts them in messages', () => {
    expect(parseCsv('a,b\rx,1\r\r"q\rr",2\ry,3', 't.csv')).toEqual([
      ['a', 'b'],
      ['x', '1'],
      ['q\rr', '2'],
      ['y', '3'],
    ]);
    expect(() => parseCsv('a,b\r"x\ry"z,3\r', 't.csv')).toThrow('t.csv: line 3: text after a closing quote');
  });

  it('reads back what an RFC 4180 writer writes', () => {
    const quote = (f: string): string => (/[",\r\n]/.test(f) || f === '' ? `"${f.replace(/"/g, '""')}"` : f);
    const field = fc.string({ unit: fc.constantFrom('a', 'b', ',', '"', '\n', '\r', ' ', 'é') });
    const table = fc.integer({ min: 1, max: 4 }).chain((cols) => fc.array(fc.array(field, { minLength: cols, maxLength: cols }), { minLength: 1, maxLength: 6 }));
    fc.assert(
      fc.property(table, fc.constantFrom('\n', '\r\n', '\r'), (rows, lineEnd) => {
        const text = rows.map((r) => r.map(quote).join(',')).join(lineEnd);
        expect(parseCsv(text, 't.csv')).toEqual(rows);
      }),
    );
  });
});
