import type { Command } from 'commander';
import { verifyDataset } from '../../src/on-demand.js';
import type { VerifyProgress } from '../../src/verify/verify-dataset.js';
import { humanBytes } from '../format.js';
import { HEADER_FLAGS, HEADER_HELP, collect, httpOption } from '../args.js';
import { EXIT_OK, EXIT_PROBLEM, printJson, runAction } from '../run-action.js';
import { loadCliProgress } from '../progress.js';

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('check every member checksum, every index invariant and every shard; exit 1 listing damaged samples')
    .argument('<dataset>', 'dataset directory or http(s) URL')
    .option('--quick', 'structure and sizes only: index invariants, shard sizes and fingerprints (reads no member)')
    .option('--json', 'print the report as JSON')
    .option(HEADER_FLAGS, HEADER_HELP, collect)
    .action(
      runAction(async (location: string, opts: { quick?: boolean; json?: boolean; header?: string[] }) => {
        const http = httpOption(opts.header);
        const bar =
          process.stderr.isTTY && !opts.json
            ? new (loadCliProgress().SingleBar)({ stream: process.stderr, format: 'verify {phase} [{bar}] {percentage}%' }, loadCliProgress().Presets.shades_classic)
            : undefined;
        let phase = '';
        const onProgress = (p: VerifyProgress): void => {
          if (bar === undefined) return;
          if (p.phase !== phase) {
            if (phase !== '') bar.stop();
            phase = p.phase;
            bar.start(Math.max(1, p.total), 0, { phase });
          }
          bar.update(p.done, { phase });
        };
        let report;
        try {
          report = await verifyDataset(location, { quick: opts.quick === true, onProgress, ...http });
        } finally {
          if (phase !== '') bar?.stop();
        }
        if (opts.json) {
          printJson(report);
          return report.ok ? EXIT_OK : EXIT_PROBLEM;
        }
        const lines: string[] = [];
        for (const p of report.problems) lines.push(`problem  ${p.file}: ${p.what}`);
        for (const d of report.damaged) lines.push(`damaged  ${d.key}  (${d.shard} @ ${d.offset}): ${d.what}`);
        if (report.damagedCount > report.damaged.length) lines.push(`... and ${report.damagedCount - report.damaged.length} more damaged`);
        const c = report.checked;
        const scope = report.quick ? 'quick check' : `${c.members} members, ${humanBytes(c.memberBytes)}`;
        lines.push(
          `${report.ok ? 'ok' : 'DAMAGED'}: ${report.location}: ${c.samples} samples, ${c.pages} index pages, ${c.shards} shards (${humanBytes(c.shardBytes)}), ${scope}` +
            (report.ok ? '' : `; ${report.damagedCount} damaged samples, ${report.problems.length} problems`),
        );
        process.stdout.write(`${lines.join('\n')}\n`);
        return report.ok ? EXIT_OK : EXIT_PROBLEM;
      }),
    );
}
