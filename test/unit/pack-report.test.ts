/** pack-report.json as the bench reads it back: the pack time for break-even, or why there is none. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACK_REPORT_FILE, readPackSeconds } from '../../src/pack/pack-report.js';
import { tmpDir } from '../helpers/tmp.js';

function withReport(doc: object): string {
  const dir = tmpDir();
  fs.writeFileSync(path.join(dir, PACK_REPORT_FILE), JSON.stringify(doc));
  return dir;
}

describe('readPackSeconds', () => {
  it('returns the seconds of a pack that ran in one go', () => {
    expect(readPackSeconds(withReport({ seconds: 12.5, samples: 100, resumedSamples: 0 }))).toEqual({ seconds: 12.5 });
  });

  it('treats a resumed pack\'s time as unknown: its seconds cover only the resumed run', () => {
    const r = readPackSeconds(withReport({ seconds: 0.4, samples: 100, resumedSamples: 60 }));
    expect(r.seconds).toBeNull();
    expect(r.why).toMatch(/finished with --resume \(60 of 100 samples .*0\.40 s cover only the resumed run/);
  });

  it('says why when the report is missing', () => {
    expect(readPackSeconds(tmpDir())).toEqual({ seconds: null, why: `${PACK_REPORT_FILE} is missing or unreadable` });
  });
});
