/**
 * `reindex` rebuilds a damaged or lost index from intact shards, and refuses shards that differ from the manifest.
 * While a shard is damaged or missing, advising it for the index would send the user into that refusal: the index
 * problems then say to restore the shards first.
 */
import { indexRemedy } from '../../formats/index-layout.js';
import type { VerifyReport } from './verify-dataset.js';

/** `changed`: the shards whose bytes differ from what the manifest recorded (what reindex compares), or are missing. */
export function adviseAroundDamagedShards(report: VerifyReport, changed: readonly string[]): void {
  if (changed.length === 0) return;
  const reindex = `; ${indexRemedy('tar')}`;
  const names = changed.slice(0, 3).join(', ') + (changed.length > 3 ? ` and ${changed.length - 3} more shards` : '');
  for (const p of report.problems) {
    if (p.what.endsWith(reindex)) {
      p.what = `${p.what.slice(0, -reindex.length)}; restore ${names} from a copy first, then run \`shardkit reindex\` (it refuses shards that differ from the manifest)`;
    }
  }
}
