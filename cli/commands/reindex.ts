import type { Command } from 'commander';
import { count } from '../format.js';
import { reindexDataset } from '../../src/on-demand.js';
import { printJson, runAction } from '../run-action.js';

export function registerReindex(program: Command): void {
  program
    .command('reindex')
    .description('rebuild the index and manifest of a tar-layout dataset from its shards alone')
    .argument('<dataset>', 'dataset directory')
    .option('--json', 'print the new manifest summary as JSON')
    .action(
      runAction(async (dir: string, opts: { json?: boolean }) => {
        const r = await reindexDataset(dir);
        const m = r.manifest;
        if (opts.json) {
          return printJson({
            samples: m.totals.samples,
            shards: m.shards.length,
            compress: m.compress,
            part: m.part ?? null,
            keptManifestFields: r.keptManifestFields,
            shardsChecked: r.shardsChecked,
            manifestProblem: r.manifestProblem ?? null,
            partFromShardNames: r.partFromShardNames,
            partProblem: r.partProblem ?? null,
          });
        }
        const kept = r.keptManifestFields
          ? 'shards checked against the old manifest; passes, files, skipped and extra kept from it'
          : `old manifest unusable (${r.manifestProblem}): passes, files, skipped and extra are lost; compress inferred as ${m.compress}; ` +
            'nothing to check the shards against, so their bytes are indexed as they are (verify cannot tell damage in them from data)';
        const part = r.partFromShardNames && m.part !== undefined ? `; part ${m.part.index}/${m.part.count} (from the shard names)` : r.partProblem === undefined ? '' : `; ${r.partProblem}`;
        process.stdout.write(`${dir}: reindexed ${count(m.totals.samples, 'sample')} in ${count(m.shards.length, 'shard')}; ${kept}${part}\n`);
      }),
    );
}
