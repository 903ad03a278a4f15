import { availableParallelism } from 'node:os';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from '../io/location.js';
import { expectInteger, expectOneOf, expectString, invalidOption } from './expect-option.js';
import { deriveSeed, SeededRandom } from './seeded-random.js';
import { makeImageNetLikeJpeg } from './synth-image.js';
import { classLabel, largeArray, sampleMetadata, tokenIds } from './synth-members.js';
import { SYNTH_SIZES, type SynthSizes } from './synth-sizes.js';

/**
 * Synthetic Lots-Of-Small-Files datasets for benchmarks and tests. Every mode uses ImageNet's layout,
 * `train/<wnid>/<wnid>_<i>.<ext>`, with sample `s` in class `s mod classes` as its `floor(s / classes)`-th
 * member, so keys group the way WebDataset and `shardkit pack` expect:
 *
 * - `imagenet`: one `.JPEG` per sample, sizes spread like ImageNet's (see synth-image.ts: ~8-155 KB, median
 *   ~90 KB, ImageNet's common dimensions, quality 90).
 * - `tiny`: the metadata-bound extreme, two sub-100-byte files per sample: `.cls` (class index) and `.txt` (token
 *   ids), thousands per directory.
 * - `mixed`: what real training-set traces show, small members next to large ones: each sample is an ImageNet-like
 *   `.JPEG` with a `.cls` label and a `.json` metadata sidecar (both under 100 bytes), and every 50th sample also
 *   carries a ~1 MiB `.npy` float16 array (a feature or depth map).
 *
 * Every member is a pure function of (seed, sample index), so the same options write the same bytes whatever
 * the concurrency (given the same sharp/libvips build for the JPEGs).
 */

export { SYNTH_SIZES, type SynthSizes };

export const SYNTH_MAX_SAMPLES = 100_000_000;
/** The wnid scheme below is unique for up to 10^7 classes; 100 000 is already far past ImageNet-21k. */
export const SYNTH_MAX_CLASSES = 100_000;
/** In `mixed`, one sample in this many also carries a ~1 MiB array. */
export const MIXED_LARGE_EVERY = 50;

export interface SynthProgress {
  samplesDone: number;
  samples: number;
  files: number;
  bytes: number;
}

export interface SynthOptions {
  /** Output directory; created if missing, must be empty if it exists. */
  dir: string;
  /** Number of samples (keys). */
  samples: number;
  /** Number of class folders, 1..min(samples, 100000). Default 10. */
  classes?: number;
  /** Which dataset shape to write. Default 'imagenet'. */
  sizes?: SynthSizes;
  /** Seed: same seed, same bytes. Default 0. */
  seed?: number;
  /** Samples generated at once. Default: 2 x available cores (JPEG encodes run on libuv's thread pool). */
  concurrency?: number;
  /** Called after each sample is written. */
  onProgress?: (progress: SynthProgress) => void;
}

export interface SynthSummary {
  dir: string;
  sizes: SynthSizes;
  seed: number;
  samples: number;
  /** Class folders written. */
  classes: number;
  files: number;
  bytes: number;
  seconds: number;
}

/** A synthetic ImageNet synset id, `n0` + 7 digits, distinct per class index and increasing with it. */
export function synthWnid(classIndex: number): string {
  // 7919 is prime and coprime with 10^7, so the ids stay distinct for 10^7 classes; the offset is ImageNet's first wnid.
  return `n0${String((1_440_764 + classIndex * 7_919) % 10_000_000).padStart(7, '0')}`;
}

interface Member {
  ext: string;
  bytes: Uint8Array;
}

async function sampleMembers(sizes: SynthSizes, seed: number, sampleIndex: number, classIndex: number, wnid: string): Promise<Member[]> {
  const random = new SeededRandom(deriveSeed(seed, sampleIndex, 1));
  switch (sizes) {
    case 'imagenet':
      return [{ ext: 'JPEG', bytes: (await makeImageNetLikeJpeg(deriveSeed(seed, sampleIndex, 2))).bytes }];
    case 'tiny':
      return [
        { ext: 'cls', bytes: classLabel(classIndex) },
        { ext: 'txt', bytes: tokenIds(random) },
      ];
    case 'mixed': {
      const members: Member[] = [
        { ext: 'JPEG', bytes: (await makeImageNetLikeJpeg(deriveSeed(seed, sampleIndex, 2))).bytes },
        { ext: 'cls', bytes: classLabel(classIndex) },
        { ext: 'json', bytes: sampleMetadata(sampleIndex, classIndex, wnid, random) },
      ];
      if (sampleIndex % MIXED_LARGE_EVERY === MIXED_LARGE_EVERY - 1) members.push({ ext: 'npy', bytes: largeArray(random) });
      return members;
    }
  }
}

interface ResolvedSynthOptions {
  dir: string;
  samples: number;
  classes: number;
  sizes: SynthSizes;
  seed: number;
  concurrency: number;
}

function resolveOptions(options: SynthOptions): ResolvedSynthOptions {
  if (typeof options !== 'object' || options === null) throw invalidOption('object', 'options', options);
  const dir = expectLocalPath('the synth directory', expectString('dir', options.dir));
  const samples = expectInteger('samples', options.samples, 1, SYNTH_MAX_SAMPLES);
  const classes = expectInteger('classes', options.classes ?? 10, 1, Math.min(samples, SYNTH_MAX_CLASSES));
  const sizes = expectOneOf('sizes', options.sizes ?? 'imagenet', SYNTH_SIZES);
  const seed = expectInteger('seed', options.seed ?? 0, 0, 0xffff_ffff);
  const concurrency = expectInteger('concurrency', options.concurrency ?? 2 * availableParallelism(), 1, 1024);
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') {
    throw invalidOption('function', 'onProgress', options.onProgress);
  }
  return { dir, samples, classes, sizes, seed, concurrency };
}

async function ensureEmptyDir(dir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ShardkitError(ErrorCodes.IO, `Cannot read ${dir}: ${(err as Error).message}`, { file: dir, cause: err });
    }
    entries = [];
  }
  if (entries.length > 0) {
    throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} is not empty; synth writes into a new or empty directory`, { file: dir });
  }
}

/**
 * Writes a synthetic Lots-Of-Small-Files dataset (see the module comment for the three shapes).
 *
 * @example
 * const { files, bytes } = await synthDataset({ dir: '/tmp/imnet', samples: 2000, classes: 10, seed: 1 });
 */
export async function synthDataset(options: SynthOptions): Promise<SynthSummary> {
  const { dir, samples, classes, sizes, seed, concurrency } = resolveOptions(options);
  const onProgress = options.onProgress;
  const started = performance.now();
  await ensureEmptyDir(dir);
  const wnids = Array.from({ length: classes }, (_, k) => synthWnid(k));
  try {
    for (const wnid of wnids) await mkdir(join(dir, 'train', wnid), { recursive: true });
  } catch (err) {
    throw new ShardkitError(ErrorCodes.IO, `Cannot create class folders in ${dir}: ${(err as Error).message}`, { file: dir, cause: err });
  }

  const limit = pLimit(concurrency);
  let samplesDone = 0;
  let files = 0;
  let bytes = 0;
  const writeSample = async (sampleIndex: number): Promise<void> => {
    const classIndex = sampleIndex % classes;
    const wnid = wnids[classIndex]!;
    const key = join(dir, 'train', wnid, `${wnid}_${Math.floor(sampleIndex / classes)}`);
    const members = await sampleMembers(sizes, seed, sampleIndex, classIndex, wnid);
    for (const member of members) {
      const file = `${key}.${member.ext}`;
      try {
        await writeFile(file, member.bytes);
      } catch (err) {
        throw new ShardkitError(ErrorCodes.IO, `Cannot write ${file}: ${(err as Error).message}`, { file, cause: err });
      }
      files += 1;
      bytes += member.bytes.length;
    }
    samplesDone += 1;
    onProgress?.({ samplesDone, samples, files, bytes });
  };
  // Queue in slices so a 10^8-sample run does not hold 10^8 pending promises at once.
  const SLICE = 4096;
  for (let start = 0; start < samples; start += SLICE) {
    const end = Math.min(samples, start + SLICE);
    const tasks: Promise<void>[] = [];
    for (let i = start; i < end; i++) tasks.push(limit(() => writeSample(i)));
    await Promise.all(tasks);
  }
  return { dir, sizes, seed, samples, classes, files, bytes, seconds: (performance.now() - started) / 1000 };
}
