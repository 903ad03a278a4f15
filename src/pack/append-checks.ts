/** What `append` checks of the dataset before it writes: that new samples can take its layout and passes. */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { ADOPTED_EXTRA_KEY, type Manifest, type ManifestPass } from '../../formats/manifest.js';
import type { Pass } from '../passes/pass.js';
import { expectPasses } from './pack-options.js';

/**
 * Refuses a dataset that append cannot grow (made by `index` from foreign tars, or one part of a partitioned pack)
 * and a layout or compression other than the dataset's.
 */
export function checkAppendable(dir: string, m: Manifest, options: { layout?: string; compress?: string }): void {
  if (m.extra[ADOPTED_EXTRA_KEY] !== undefined) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `dataset ${dir} indexes foreign tars (shardkit index); append to a dataset that shardkit packed, or pack the new files apart`, { file: dir });
  }
  if (m.part !== undefined) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `dataset ${dir} is part ${m.part.index}/${m.part.count} of a partitioned pack; merge the parts first, then append to the merged dataset`, { file: dir });
  }
  if (options.layout !== undefined && options.layout !== m.layout) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `dataset ${dir} has the ${m.layout} layout, not ${options.layout}; new samples take the dataset's layout: leave --layout out`, { file: dir });
  }
  if (options.compress !== undefined && options.compress !== m.compress) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `dataset ${dir} was packed with --compress ${m.compress}, not ${options.compress}; new samples take the dataset's compression: leave --compress out`, { file: dir });
  }
}

function describe(passes: readonly ManifestPass[]): string {
  return passes.length === 0 ? 'none' : passes.map((p) => `${p.name} ${JSON.stringify(p.params)}`).join(', ');
}

/**
 * The passes that make the new samples: the dataset's, made again from its manifest (tag=dirname keeps the class
 * list and adds new names after it). `given` (--pass, --pass-module) must list exactly the dataset's passes; it is
 * needed only for passes a manifest cannot make again (a label table, a user's module).
 */
export async function appendPasses(dir: string, m: Manifest, given: Pass[] | undefined): Promise<Pass[]> {
  const records = m.passes;
  if (given !== undefined && expectPasses(given).length > 0) {
    const asRecords = given.map((p) => ({ name: p.name, params: p.params }));
    if (JSON.stringify(asRecords) !== JSON.stringify(records)) {
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        `the passes given (${describe(asRecords)}) differ from those of dataset ${dir} (${describe(records)}); new samples get the dataset's passes: give none, or exactly those`,
        { file: dir },
      );
    }
  }
  if (records.length === 0) return [];
  // pass code (sharp) loads only for a dataset made with passes
  const { passFromRecord } = await import('../passes/pass-from-record.js');
  const classes = Array.isArray(m.extra.classes) ? (m.extra.classes as unknown[]).filter((c): c is string => typeof c === 'string') : [];
  return records.map((record, i) => {
    const made = passFromRecord(record, classes);
    const pass = made ?? given?.[i];
    if (pass === undefined) {
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        `dataset ${dir} was made with pass ${i + 1} (${describe([record])}), which append cannot make from the manifest; give the dataset's passes again with --pass / --pass-module`,
        { file: dir },
      );
    }
    return pass;
  });
}
