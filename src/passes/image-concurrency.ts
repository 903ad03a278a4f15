/**
 * How many images to process at once, and with how many libvips threads each, so the two do not multiply.
 *
 * sharp runs each pipeline on a libuv worker thread, and libvips may split each image over
 * `sharp.concurrency()` threads of its own. With N cores, N parallel jobs x N libvips threads is N^2 threads
 * fighting for N cores. For training sets of many small images (10-500 KB) one thread per image and one image per
 * core is faster than threading inside an image (little work to split, no cross-thread handoff), which is what
 * sharp's documentation advises for high-throughput batch work. So: jobs = cores, libvips threads = 1.
 *
 * The libuv pool (UV_THREADPOOL_SIZE, default 4) caps how many sharp jobs really run at once and is shared with
 * file reads; it can only be set in the environment before the process first uses it. `uvThreadpoolSize` is the
 * value to set (jobs plus the default 4 for I/O): the CLI's bin (cli/launcher.cjs) sets it, unless the user did.
 */
import { availableParallelism } from 'node:os';
import { sharpLib } from './sharp-lib.js';
import { checkInteger } from './validate.js';

export interface ImageConcurrency {
  /** Images processed at once (p-limit's concurrency). */
  jobs: number;
  /** libvips threads per image, for sharp.concurrency(). */
  sharpThreads: number;
  /** Recommended UV_THREADPOOL_SIZE so sharp jobs and file reads both get threads. */
  uvThreadpoolSize: number;
}

/** libuv's default pool size, left for file I/O next to the image jobs. */
const UV_DEFAULT_THREADS = 4;
/** libuv refuses pools above this. */
const UV_MAX_THREADS = 1024;
/** A sanity bound for the cores argument. */
const MAX_CORES = 65_536;

/**
 * The recommended image concurrency for `cores` cores (default: what the OS gives this process).
 * @example const { jobs } = imageConcurrency(); const limit = pLimit(jobs);
 */
export function imageConcurrency(cores: number = availableParallelism()): ImageConcurrency {
  checkInteger(cores, 1, MAX_CORES, 'cores');
  return { jobs: cores, sharpThreads: 1, uvThreadpoolSize: Math.min(UV_MAX_THREADS, cores + UV_DEFAULT_THREADS) };
}

/**
 * Applies the libvips side of {@link imageConcurrency} to sharp (process-wide): threads per image, and no
 * operation cache, since every input image is decoded once and caching only costs memory.
 */
export async function configureSharpForPacking(settings: ImageConcurrency = imageConcurrency()): Promise<void> {
  const sharp = sharpLib();
  sharp.concurrency(settings.sharpThreads);
  sharp.cache(false);
}
