/**
 * The public API's whole-dataset operations (pack, append, derive, merge, verify, extract, reindex, index, synth, bench, exemplar buffers):
 * each loads its modules on its first call, so that `import { openDataset } from 'shardkit'` in a training process
 * does not load the pack pipeline, the benchmark and the report (about 100 modules; 2.7x `node -e 0` to import
 * before, see bench/startup.mjs). The command line takes its library calls from here too, and openDataset as well,
 * so that `shardkit --help`, which registers every command, loads none of them. Each wrapper has the type of the
 * function it calls; the `import type`s cost nothing at run time.
 */
import type * as Append from './pack/append.js';
import type * as Derive from './pack/derive.js';
import type * as ExemplarBuffer from './pack/exemplar-buffer.js';
import type * as Merge from './pack/merge.js';
import type * as Pack from './pack/pack.js';
import type * as RunBench from './bench/run-bench.js';
import type * as Synth from './bench/synth.js';
import type * as WriteReport from './bench/write-report.js';
import type * as Extract from './verify/extract.js';
import type * as Verify from './verify/verify-dataset.js';
import type * as AdoptTars from './adopt/adopt-tars.js';
import type * as Reindex from './adopt/reindex.js';
import type * as OpenDataset from './read/dataset.js';

/** Opens a dataset (the command line's; the library exports read/dataset.ts's own): see {@link OpenDataset.openDataset}. */
export const openDataset: typeof OpenDataset.openDataset = async (location, options) => (await import('./read/dataset.js')).openDataset(location, options);

/** Packs a source tree into a dataset: see {@link Pack.pack}. */
export const pack: typeof Pack.pack = async (options) => (await import('./pack/pack.js')).pack(options);
/** Adds a source tree's files to a dataset as new shards under a new index: see {@link Append.append}. */
export const append: typeof Append.append = async (options) => (await import('./pack/append.js')).append(options);
/** Writes the exemplar buffer after a task of continual learning: see {@link ExemplarBuffer.updateExemplarBuffer}. */
export const updateExemplarBuffer: typeof ExemplarBuffer.updateExemplarBuffer = async (options) =>
  (await import('./pack/exemplar-buffer.js')).updateExemplarBuffer(options);
/** Writes a dataset derived from another through passes: see {@link Derive.derive}. */
export const derive: typeof Derive.derive = async (options) => (await import('./pack/derive.js')).derive(options);
/** Merges the parts of a `--part I/N` pack into one dataset: see {@link Merge.mergeParts}. */
export const mergeParts: typeof Merge.mergeParts = async (parts, out, options) => (await import('./pack/merge.js')).mergeParts(parts, out, options);
/** Checks every stored byte of a dataset: see {@link Verify.verifyDataset}. */
export const verifyDataset: typeof Verify.verifyDataset = async (location, options) => (await import('./verify/verify-dataset.js')).verifyDataset(location, options);
/** Writes a dataset's samples back as files: see {@link Extract.extractDataset}. */
export const extractDataset: typeof Extract.extractDataset = async (location, dir, options) => (await import('./verify/extract.js')).extractDataset(location, dir, options);
/** Rebuilds a dataset's index from its shards: see {@link Reindex.reindexDataset}. */
export const reindexDataset: typeof Reindex.reindexDataset = async (dir, options) => (await import('./adopt/reindex.js')).reindexDataset(dir, options);
/** Indexes existing tar files in place: see {@link AdoptTars.adoptTars}. */
export const adoptTars: typeof AdoptTars.adoptTars = async (tars, options) => (await import('./adopt/adopt-tars.js')).adoptTars(tars, options);
/** Writes a synthetic ImageNet-like source tree: see {@link Synth.synthDataset}. */
export const synthDataset: typeof Synth.synthDataset = async (options) => (await import('./bench/synth.js')).synthDataset(options);
/** Benchmarks raw files against a dataset in child processes: see {@link RunBench.runBench}. */
export const runBench: typeof RunBench.runBench = async (options) => (await import('./bench/run-bench.js')).runBench(options);
/** Writes report.json, report.md and report.html: see {@link WriteReport.writeReport}. */
export const writeReport: typeof WriteReport.writeReport = async (dir, report) => (await import('./bench/write-report.js')).writeReport(dir, report);
