/**
 * The walk side of a pack's source: the samples of the source (of one part, past the samples a resumed pack wrote
 * already) cut into tasks for the readers (source-batches.ts).
 */
import { walkSamples } from './group-samples.js';
import { partOfKey } from './partition.js';
import { TASK_SAMPLES, type SourceBatchOptions, type SourceTask } from './source-batches.js';
import type { WalkEntry, WalkStats } from './walk.js';

/** Walks the source, keeps the samples of the part past `skip`, and cuts them into tasks. */
export async function* sourceTasks(options: SourceBatchOptions, stats: (s: WalkStats) => void): AsyncGenerator<SourceTask> {
  const walk = walkSamples(options.root, {
    followSymlinks: options.followSymlinks,
    includeHidden: options.includeHidden,
    ...(options.include === undefined ? {} : { include: options.include }),
    ...(options.exclude === undefined ? {} : { exclude: options.exclude }),
    // sizes come from the fstat at read time: no lstat per file in the walk
    stat: false,
  });
  let seen = 0;
  const empty = (task: number): SourceTask => ({ task, keys: [], counts: [], exts: [], paths: [] });
  let task = empty(0);
  for await (const samples of walk.chunks()) {
    for (const s of samples) {
      if (options.part !== undefined && partOfKey(s.key, options.part.count) !== options.part.index) continue;
      if (seen++ < options.skip) continue;
      task.keys.push(s.key);
      task.counts.push(s.files.length);
      for (let i = 0; i < s.files.length; i++) {
        task.exts.push(s.exts[i] as string);
        task.paths.push((s.files[i] as WalkEntry).absPath);
      }
      if (task.keys.length === TASK_SAMPLES) {
        yield task;
        task = empty(task.task + 1);
      }
    }
  }
  if (task.keys.length > 0) yield task;
  stats({ ...walk.stats });
}
