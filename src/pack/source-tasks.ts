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
  let task = 0;
  let keys: string[] = [];
  let counts: number[] = [];
  let exts: string[] = [];
  let paths: string[] = [];
  const cut = (): SourceTask => {
    const t = { task: task++, keys: keys.join('\0'), counts, exts: exts.join('\0'), paths: paths.join('\0') };
    keys = [];
    counts = [];
    exts = [];
    paths = [];
    return t;
  };
  for await (const samples of walk.chunks()) {
    for (const s of samples) {
      if (options.part !== undefined && partOfKey(s.key, options.part.count) !== options.part.index) continue;
      if (seen++ < options.skip) continue;
      keys.push(s.key);
      counts.push(s.files.length);
      for (let i = 0; i < s.files.length; i++) {
        exts.push(s.exts[i] as string);
        paths.push((s.files[i] as WalkEntry).absPath);
      }
      if (keys.length === TASK_SAMPLES) yield cut();
    }
  }
  if (keys.length > 0) yield cut();
  stats({ ...walk.stats });
}
