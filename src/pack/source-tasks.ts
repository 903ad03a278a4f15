/**
 * The walk side of a pack's source: the samples of the source (of one part, past the samples a resumed pack wrote
 * already) cut into tasks for the readers (source-batches.ts).
 */
import { normalize } from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { InputCheck } from './input-proof.js';
import { RunGrouper } from './group-samples.js';
import { partOfKey } from './partition.js';
import { TASK_SAMPLES, type SourceBatchOptions, type SourceTask } from './source-batches.js';
import { walkSource, type WalkStats } from './walk.js';

/**
 * Walks the source, keeps the samples of the part past `skip`, and cuts them into tasks. Names only: sizes come from
 * the reader's fstat (no lstat per file in the walk), and readers find each file from the root, key and extension.
 */
export async function* sourceTasks(options: SourceBatchOptions, stats: (s: WalkStats) => void): AsyncGenerator<SourceTask> {
  const { root: source, part, skip, skipCheck: check, skipProof, encode, groupNumbered, ...filters } = options;
  const walk = walkSource(source, { ...filters, stat: false });
  const root = normalize(source);
  const grouper = new RunGrouper({ ...(groupNumbered === undefined ? {} : { groupNumbered }), ...(filters.keyRule === undefined ? {} : { keyRule: filters.keyRule }) });
  const proof = skipProof === undefined || skipProof.length === 0 ? undefined : new InputCheck(source, skipProof, filters.followSymlinks);
  let seen = 0;
  let task = 0;
  let keys: string[] = [];
  let counts: number[] = [];
  let exts: string[] = [];
  const cut = (): SourceTask => {
    const t = { task: task++, root, keys: keys.join('\0'), counts, exts: exts.join('\0') };
    keys = [];
    counts = [];
    exts = [];
    return t;
  };
  for await (const run of walk.runs()) {
    const samples = grouper.group(run);
    let member = 0;
    for (let s = 0; s < samples.keys.length; s++) {
      const key = samples.keys[s] as string;
      const count = samples.counts[s] as number;
      const first = member;
      member += count;
      if (part !== undefined && partOfKey(key, part.count) !== part.index) continue;
      if (seen < skip) {
        if (check !== undefined && seen === check.at && key !== check.key) throw sourceChanged(`sample ${seen + 1} is now ${JSON.stringify(key)}, the interrupted pack wrote ${JSON.stringify(check.key)} there`);
        proof?.check(seen, key, samples.exts.slice(first, member) as string[]);
        seen++;
        continue;
      }
      seen++;
      keys.push(key);
      counts.push(count);
      for (let m = first; m < member; m++) exts.push(samples.exts[m] as string);
      if (keys.length === TASK_SAMPLES) yield cut();
    }
  }
  if (seen < skip) throw sourceChanged(`it has ${seen} samples, the interrupted pack had written ${skip}`);
  if (keys.length > 0) yield cut();
  stats({ ...walk.stats });
}

/** A resume's source no longer has the samples the interrupted pack wrote, where it wrote them. */
function sourceChanged(why: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INPUT_CHANGED, `the source changed since the interrupted pack (${why}); start over with --force`);
}
