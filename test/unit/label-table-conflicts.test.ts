/**
 * Issue 26, item 10 (family: a table that gives one sample two labels is an error naming both rows). Rows
 * `c00/s0.txt,cat` and `c00/s0.json,dog` name two members of one sample; the pass used to pick `dog` silently.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { parseCsvLabelTable, parseJsonLabelTable } from '../../src/passes/label-table.js';

describe('label tables refuse two rows for one sample', () => {
  it('conflicting_tag_rows_csv: names both rows and the sample', () => {
    const text = 'path,label\nc00/s0.txt,cat\nc01/s1.txt,cat\nc00/s0.json,dog\n';
    expect(() => parseCsvLabelTable(text, 'labels.csv')).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_ARG,
        message: expect.stringMatching(/^labels\.csv: data row 1 \("c00\/s0\.txt".*cat.*\) and data row 3 \("c00\/s0\.json".*dog.*\) give sample "c00\/s0" two different rows/),
      }),
    );
  });

  it('conflicting_tag_rows_key_and_path: a key row and a path row of one sample', () => {
    expect(() => parseCsvLabelTable('key,label\nc00/s0,1\nc00/s0.jpg,2\n', 't.csv')).toThrow(/data row 1 .* and data row 2 .* give sample "c00\/s0"/);
    expect(() => parseJsonLabelTable('{"c00/s0.jpg": "cat", "c00/s0.seg.png": "dog"}', 't.json')).toThrow(/entry "c00\/s0.jpg" .* and entry "c00\/s0.seg.png" .* give sample "c00\/s0"/);
    expect(() => parseJsonLabelTable('[{"key": "a", "bbox": [1]}, {"path": "a.jpg", "bbox": [2]}]', 't.json')).toThrow(/element 0 .* and element 1 .* give sample "a"/);
  });

  it('rows of one sample with the same fields agree, and are accepted', () => {
    const t = parseCsvLabelTable('path,label\nc00/s0.txt,cat\nc00/s0.json,cat\nc01/s1.txt,dog\n', 'ok.csv');
    expect(t.classes).toEqual(['cat', 'dog']);
    expect(t.classIndex?.get('c00/s0.json')).toBe(0);
  });

  it('property: a table is refused exactly when two rows of one sample differ', () => {
    const row = fc.record({ key: fc.constantFrom('a/0', 'a/1', 'b/0'), ext: fc.constantFrom('', 'jpg', 'txt', 'seg.png'), label: fc.constantFrom('cat', 'dog') });
    fc.assert(
      fc.property(fc.uniqueArray(row, { minLength: 1, maxLength: 8, selector: (r) => `${r.key}.${r.ext}` }), (rows) => {
        const text = `path,label\n${rows.map((r) => `${r.ext === '' ? r.key : `${r.key}.${r.ext}`},${r.label}`).join('\n')}\n`;
        const labels = new Map<string, Set<string>>();
        for (const r of rows) labels.set(r.key, (labels.get(r.key) ?? new Set()).add(r.label));
        const conflict = [...labels.values()].some((l) => l.size > 1);
        if (conflict) expect(() => parseCsvLabelTable(text, 'p.csv')).toThrow(/two different rows/);
        else expect(parseCsvLabelTable(text, 'p.csv').rows.size).toBe(rows.length);
      }),
    );
  });
});
