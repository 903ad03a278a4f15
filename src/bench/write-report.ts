import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from '../io/location.js';
import { renderHtml } from './render-html.js';
import { renderMarkdown } from './render-md.js';
import type { BenchReport } from './report.js';

export interface WrittenReport {
  json: string;
  markdown: string;
  html: string;
}

/** Writes report.json, report.md and report.html into `dir` (created if missing); returns their paths. */
export async function writeReport(dir: string, report: BenchReport): Promise<WrittenReport> {
  expectLocalPath('the report directory', dir);
  const paths: WrittenReport = { json: join(dir, 'report.json'), markdown: join(dir, 'report.md'), html: join(dir, 'report.html') };
  const html = await renderHtml(report);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(paths.json, `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(paths.markdown, renderMarkdown(report));
    await writeFile(paths.html, html);
  } catch (err) {
    throw new ShardkitError(ErrorCodes.IO, `Cannot write the bench report in ${dir}: ${(err as Error).message}`, { file: dir, cause: err });
  }
  return paths;
}
