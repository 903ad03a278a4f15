import type { Command } from 'commander';
import { verifyDataset } from '../../src/on-demand.js';
import type { VerifyProgress } from '../../src/verify/verify-dataset.js';
import { count, humanBytes, indexPages } from '../format.js';
import { HEADER_FLAGS, HEADER_HELP, TIMEOUT_FLAGS, TIMEOUT_HELP, collect, httpOption, CACHE_DIR_FLAGS, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';
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
    .option(TIMEOUT_FLAGS, TIMEOUT_HELP)
    .option(
      CACHE_DIR_FLAGS,
      'fill this node-local shard cache on the way: every shard is still read and checked at the source (a copy proves nothing about it), and each intact one is copied, so a training run after it starts warm; a damaged shard is not copied, and an intact copy of it already cached is named for the repair',
    )
    .option(CACHE_SIZE_FLAGS, CACHE_SIZE_HELP)
    .action(
      runAction(async (location: string, opts: { quick?: boolean; json?: boolean; header?: string[]; timeout?: string; cacheDir?: string; cacheSize?: string }) => {
        const cache = cacheOption(opts.cacheDir, opts.cacheSize);
        const http = httpOption(opts.header, opts.timeout);
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
          report = await verifyDataset(location, { quick: opts.quick === true, onProgress, ...http, ...cache });
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
        for (const r of report.cache?.repairFrom ?? []) lines.push(`repair   ${r.shard}: the cache holds an intact copy (size and CRC32C as the index says): ${r.copy}; put it back in place of the damaged shard`);
        if (report.cache !== undefined) {
          const k = report.cache;
          process.stderr.write(`shardkit: note: cache ${k.dir}: ${k.copied} shards copied (${humanBytes(k.copiedBytes)}), ${k.alreadyCached} already cached, ${k.notCopied} intact ones not copied (no room or being fetched by another process)\n`);
        }
        const c = report.checked;
        const scope = report.quick ? 'quick check' : `${count(c.members, 'member')}, ${humanBytes(c.memberBytes)}`;
        lines.push(
          `${report.ok ? 'ok' : 'DAMAGED'}: ${report.location}: ${count(c.samples, 'sample')}, ${indexPages(c.pages)}, ${count(c.shards, 'shard')} (${humanBytes(c.shardBytes)}), ${scope}` +
            (report.ok ? '' : `; ${count(report.damagedCount, 'damaged sample')}, ${count(report.problems.length, 'problem')}`),
        );
        process.stdout.write(`${lines.join('\n')}\n`);
        return report.ok ? EXIT_OK : EXIT_PROBLEM;
      }),
    );
}
