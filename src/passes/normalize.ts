/**
 * `normalize`: contrast stretch (sharp `normalise`), format kept.
 * `normalize=MEAN:STD`: per-channel standardisation into a float32 tensor stored as a NumPy `.npy` member.
 */
import type { Sharp } from 'sharp';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { encodeKeeping, mapImageMembers, openImage, replaceLastExt } from './image-codec.js';
import { encodeNpy, npyFileBytes } from './npy.js';
import type { Pass } from './pass.js';
import { checkInteger } from './validate.js';
import { DEFAULT_MAX_MEMBER_BYTES } from '../read/dataset-options.js';

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
        bytes: await (await encodeKeeping(openImage(bytes).normalise(), format)).toBuffer(),
      }));
      return { key: sample.key, members };
    },
  };
}

export interface TensorNormalizeOptions {
  /** Per-channel means on the 0..1 scale of pixels, e.g. ImageNet's [0.485, 0.456, 0.406]. */
  mean: readonly number[];
  /** Per-channel standard deviations, same length as `mean`, each > 0. */
  std: readonly number[];
  /**
   * The largest `.npy` member (bytes) to make; a larger image fails its sample (INPUT). Default and upper bound:
   * {@link DEFAULT_MAX_MEMBER_BYTES}, the largest member a reader takes by default.
   */
  maxMemberBytes?: number;
}

/** Pixels map to 0..1 by their depth's maximum, as torchvision's ToTensor does for 8 bits. */
const UCHAR_MAX = 255;
const USHORT_MAX = 65535;
/** The largest finite float32, 2^128 - 2^104. */
const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * A pass that replaces each image member by a float32 tensor `(pixel / max - mean[c]) / std[c]` in (C, H, W)
 * order, stored as a `.npy` member (`key.jpg` -> `key.npy`, `key.seg.png` -> `key.seg.npy`) that `numpy.load`
 * reads. `max` is 255, or 65535 for 16-bit images (16-bit PNG and TIFF keep their precision). Three means give an
 * RGB tensor (grey images are expanded, alpha is dropped as PIL's `convert('RGB')` does); one mean gives a single
 * grey channel. EXIF orientation is applied first.
 * @example tensorNormalizePass({ mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] })
 */
export function tensorNormalizePass(options: TensorNormalizeOptions): Pass {
  const mean = checkChannelList(options.mean, 'mean');
  const std = checkChannelList(options.std, 'std');
  if (mean.length !== std.length) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected as many std values as mean values for normalize but received ${mean.length} means and ${std.length} stds`);
  }
  std.forEach((s, c) => {
    if (s <= 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected std values above 0 for normalize but received ${s}`);
    // the exact bound: a tiny std (1e-50) or a huge mean turned every value into +-Infinity
    const m = mean[c] as number;
    if (Math.max(Math.abs(m), Math.abs(1 - m)) / s > FLOAT32_MAX) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected mean and std for normalize that keep (x - mean) / std a finite float32 for x in [0, 1] but received mean ${m} and std ${s}`);
    }
  });
  const maxMemberBytes = checkInteger(options.maxMemberBytes ?? DEFAULT_MAX_MEMBER_BYTES, 1, DEFAULT_MAX_MEMBER_BYTES, 'maxMemberBytes');
  const channels = mean.length;
  return {
    name: 'normalize',
    params: { mode: 'tensor', mean: [...mean], std: [...std], layout: 'CHW', dtype: 'float32' },
    async run(sample) {
      const members = await mapImageMembers(sample.key, sample.members, 'normalize', async (bytes, _format, ext) => {
        const { samples, width, height, max } = await decodePixels(openImage(bytes), channels, sample.key, ext, maxMemberBytes);
        return { ext: replaceLastExt(ext, 'npy'), bytes: encodeNpy(standardize(samples, width, height, mean, std, max)) };
      });
      return { key: sample.key, members };
    },
  };
}

/**
 * Decodes to interleaved pixels of `channels` channels: 8-bit, or 16-bit when the input is (sharp's 8-bit colour
 * spaces would round 65536 levels to 256). The length is checked against the shape: a sample depth other than the
 * one asked for must fail the sample, not be read as bytes of other pixels.
 */
async function decodePixels(image: Sharp, channels: number, key: string, ext: string, maxMemberBytes: number) {
  const meta = await image.metadata();
  // checked before decoding: a 14000x14000 JPEG of 1 MB would make a 2.3 GB tensor that no reader takes by default
  const memberBytes = npyFileBytes([channels, meta.height ?? 0, meta.width ?? 0]);
  if (memberBytes > maxMemberBytes) {
    throw new ShardkitError(
      ErrorCodes.INPUT,
      `Image member ${ext} of sample ${key} is ${meta.width}x${meta.height}: its .npy tensor would be ${memberBytes} bytes, over the ${maxMemberBytes}-byte member limit; resize it first (--pass resize=WxH before normalize)`,
      { key },
    );
  }
  const sixteen = meta.depth === 'ushort';
  const space = channels === 1 ? (sixteen ? 'grey16' : 'b-w') : sixteen ? 'rgb16' : 'srgb';
  const pipeline = image.removeAlpha().toColourspace(space);
  const { data, info } = await (sixteen ? pipeline.raw({ depth: 'ushort' }) : pipeline.raw()).toBuffer({ resolveWithObject: true });
  if (info.channels !== channels) {
    throw new ShardkitError(ErrorCodes.INPUT, `Image member ${ext} of sample ${key} decoded to ${info.channels} channels, expected ${channels}`, { key });
  }
  const bytesPerSample = sixteen ? 2 : 1;
  const expected = info.width * info.height * channels * bytesPerSample;
  if (data.length !== expected) {
    throw new ShardkitError(ErrorCodes.INPUT, `Image member ${ext} of sample ${key} decoded to ${data.length} bytes, expected ${expected} (${info.width}x${info.height}x${channels}, ${bytesPerSample} byte(s) per sample)`, { key });
  }
  // raw ushort output is in the host's byte order, as Uint16Array reads it (copied to a fresh buffer if misaligned)
  const aligned = data.byteOffset % 2 === 0 ? data : new Uint8Array(data);
  const samples = sixteen ? new Uint16Array(aligned.buffer, aligned.byteOffset, data.length / 2) : data;
  return { samples, width: info.width, height: info.height, max: sixteen ? USHORT_MAX : UCHAR_MAX };
}

/**
 * Interleaved HWC pixels -> planar CHW standardized floats, `(pixel / max - mean) / std`. Exported for tests and
 * custom passes.
 * @param max the largest pixel value: 255 for 8-bit pixels (default), 65535 for 16-bit.
 */
export function standardize(hwc: ArrayLike<number>, width: number, height: number, mean: readonly number[], std: readonly number[], max = UCHAR_MAX) {
  const channels = mean.length;
  const plane = width * height;
  const data = new Float32Array(channels * plane);
  for (let c = 0; c < channels; c++) {
    const m = mean[c] as number;
    const s = std[c] as number;
    for (let p = 0; p < plane; p++) data[c * plane + p] = ((hwc[p * channels + c] as number) / max - m) / s;
  }
  return { shape: [channels, height, width], data };
}

function checkChannelList(values: readonly number[], what: string): number[] {
  if (!Array.isArray(values) || (values.length !== 1 && values.length !== 3) || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected 1 or 3 finite numbers for normalize ${what} but received ${JSON.stringify(values)}`);
  }
  return [...values];
}
