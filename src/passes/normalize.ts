/**
 * `normalize`: contrast stretch (sharp `normalise`), format kept.
 * `normalize=MEAN:STD`: per-channel standardisation into a float32 tensor stored as a NumPy `.npy` member.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { encodeAs, mapImageMembers, openImage, replaceLastExt } from './image-codec.js';
import { encodeNpy } from './npy.js';
import type { Pass } from './pass.js';

/**
 * A pass that stretches each image member's contrast so its luminance spans the full range (sharp's
 * `normalise`, 1st to 99th percentile), keeping format and extension.
 */
export function contrastNormalizePass(): Pass {
  return {
    name: 'normalize',
    params: { mode: 'contrast' },
    async run(sample) {
      const members = await mapImageMembers(sample.key, sample.members, 'normalize', async (bytes, format, ext) => ({
        ext,
        bytes: await encodeAs(openImage(bytes).normalise(), format).toBuffer(),
      }));
      return { key: sample.key, members };
    },
  };
}

export interface TensorNormalizeOptions {
  /** Per-channel means on the 0..1 scale of 8-bit pixels, e.g. ImageNet's [0.485, 0.456, 0.406]. */
  mean: readonly number[];
  /** Per-channel standard deviations, same length as `mean`, each > 0. */
  std: readonly number[];
}

/** 8-bit pixels map to 0..1 by this divisor, as torchvision's ToTensor does. */
const PIXEL_MAX = 255;

/**
 * A pass that replaces each image member by a float32 tensor `(pixel / 255 - mean[c]) / std[c]` in (C, H, W)
 * order, stored as a `.npy` member (`key.jpg` -> `key.npy`, `key.seg.png` -> `key.seg.npy`) that `numpy.load`
 * reads. Three means give an RGB tensor (grey images are expanded, alpha is dropped as PIL's `convert('RGB')`
 * does); one mean gives a single grey channel. EXIF orientation is applied first.
 * @example tensorNormalizePass({ mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] })
 */
export function tensorNormalizePass(options: TensorNormalizeOptions): Pass {
  const mean = checkChannelList(options.mean, 'mean');
  const std = checkChannelList(options.std, 'std');
  if (mean.length !== std.length) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected as many std values as mean values for normalize but received ${mean.length} means and ${std.length} stds`);
  }
  for (const s of std) {
    if (s <= 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected std values above 0 for normalize but received ${s}`);
  }
  const channels = mean.length;
  return {
    name: 'normalize',
    params: { mode: 'tensor', mean: [...mean], std: [...std], layout: 'CHW', dtype: 'float32' },
    async run(sample) {
      const members = await mapImageMembers(sample.key, sample.members, 'normalize', async (bytes, _format, ext) => {
        const image = openImage(bytes).removeAlpha().toColourspace(channels === 1 ? 'b-w' : 'srgb');
        const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
        if (info.channels !== channels) {
          throw new ShardkitError(ErrorCodes.INPUT, `Image member ${ext} of sample ${sample.key} decoded to ${info.channels} channels, expected ${channels}`, { key: sample.key });
        }
        return { ext: replaceLastExt(ext, 'npy'), bytes: encodeNpy(standardize(data, info.width, info.height, mean, std)) };
      });
      return { key: sample.key, members };
    },
  };
}

/** Interleaved HWC bytes -> planar CHW standardized floats. Exported for tests and custom passes. */
export function standardize(hwc: Uint8Array, width: number, height: number, mean: readonly number[], std: readonly number[]) {
  const channels = mean.length;
  const plane = width * height;
  const data = new Float32Array(channels * plane);
  for (let c = 0; c < channels; c++) {
    const m = mean[c] as number;
    const s = std[c] as number;
    for (let p = 0; p < plane; p++) data[c * plane + p] = ((hwc[p * channels + c] as number) / PIXEL_MAX - m) / s;
  }
  return { shape: [channels, height, width], data };
}

function checkChannelList(values: readonly number[], what: string): number[] {
  if (!Array.isArray(values) || (values.length !== 1 && values.length !== 3) || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected 1 or 3 finite numbers for normalize ${what} but received ${JSON.stringify(values)}`);
  }
  return [...values];
}
