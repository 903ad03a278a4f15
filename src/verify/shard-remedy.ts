/**
 * `reindex` rebuilds a damaged or lost index from intact shards, and refuses shards that differ from the manifest.
 * While a shard is damaged or missing, advising it for the index would send the user into that refusal: the index
 * problems then say to restore the shards first.
 */
import { indexRemedy } from '../../formats/index-layout.js';
import type { Manifest } from '../../formats/manifest.js';
import type { VerifyReport } from './verify-dataset.js';

export function adviseAroundDamagedShards(report: VerifyReport, manifest: Manifest): void {
  const shardNames = new Set(manifest.shards.map((s) => s.file));
  const damaged = [...new Set(report.problems.filter((p) => shardNames.has(p.file)).map((p) => p.file))];
  if (damaged.length === 0) return;
  const reindex = `; ${indexRemedy('tar')}`;
  const names = damaged.slice(0, 3).join(', ') + (damaged.length > 3 ? ` and ${damaged.length - 3} more shards` : '');
  for (const p of report.problems) {
    if (p.what.endsWith(reindex)) {
      p.what = `${p.what.slice(0, -reindex.length)}; restore ${names} from a copy first, then run \`shardkit reindex\` (it refuses shards that differ from the manifest)`;
    }
  }
}
