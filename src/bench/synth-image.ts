import { sharpLib } from '../passes/sharp-lib.js';
import { SeededRandom } from './seeded-random.js';

/**
 * ImageNet-like JPEGs from a seed, cheaply. Each image is a colour gradient, a few solid rectangles and ellipses,
 * and per-pixel noise. The noise amplitude is the knob that sets the encoded size: JPEG spends its bits on
 * high-frequency detail, so noise makes sizes realistic where flat synthetic images would compress to a few KB.
 *
 * Size model (what a training loader sees from ImageNet-1k train: 1.28 M files, ~140 GB, mean ~110 KB, most at
 * 500x375 / 500x333 / 375x500, with a left tail of small low-detail photos): a target size is drawn from a
 * mixture of a log-normal with median {@link JPEG_MEDIAN_BYTES} and sigma {@link JPEG_SIZE_SIGMA} and, with
 * probability {@link JPEG_SMALL_SHARE}, a log-uniform over [{@link JPEG_MIN_BYTES}, 64 KiB]; clipped to
 * [{@link JPEG_MIN_BYTES}, {@link JPEG_MAX_BYTES}]. Dimensions come from ImageNet's common sizes; the noise amplitude is read off a
 * calibration table (bits per pixel at quality 90, measured on this generator) and corrected once if the first
 * encoding misses the target by more than a third. Sizes land within about 25 % of the target. Measured over 3000
 * images (seed 0): min 8 KB, p10 46 KB, median 91 KB, p90 140 KB, max 156 KB, mean 90 KB. ImageNet's mean is higher
 * (~110 KB) because of a long tail of large photos above 150 KB that this generator leaves out.
 *
 * Same seed => same pixels => same bytes, given the same sharp/libvips/mozjpeg build.
 */

export const JPEG_QUALITY = 90;
export const JPEG_MEDIAN_BYTES = 96 * 1024;
export const JPEG_SIZE_SIGMA = 0.35;
export const JPEG_SMALL_SHARE = 0.1;
const JPEG_SMALL_MAX_BYTES = 64 * 1024;
export const JPEG_MIN_BYTES = 10 * 1024;
export const JPEG_MAX_BYTES = 150 * 1024;

const CHANNELS = 3;

/** ImageNet's most common sizes and a rough share of each (landscape 4:3 and 3:2 dominate). */
export const IMAGENET_DIMENSIONS: readonly (readonly [readonly [number, number], number])[] = [
  [[500, 375], 0.4],
  [[500, 333], 0.2],
  [[375, 500], 0.15],
  [[500, 500], 0.08],
  [[333, 500], 0.07],
  [[400, 300], 0.1],
];

/**
 * Bits per pixel of this generator's output at {@link JPEG_QUALITY} by noise amplitude, averaged over 48 seeds at
 * 500x375 (see test/unit/synth.test.ts for the check that sizes follow the target). Monotonic in amplitude.
 */
const BPP_BY_NOISE: readonly (readonly [number, number])[] = [
  [0, 0.458],
  [2, 0.481],
  [4, 0.602],
  [8, 0.906],
  [16, 1.49],
  [32, 2.521],
  [64, 3.935],
  [96, 4.794],
  [128, 5.413],
  [160, 5.903],
  [192, 6.311],
  [255, 6.957],
];

const MAX_NOISE = 255;

/** Inverse of the calibration table by linear interpolation: the noise amplitude that gives `bpp` bits per pixel. */
export function noiseForBitsPerPixel(bpp: number): number {
  const first = BPP_BY_NOISE[0]!;
  if (bpp <= first[1]) return 0;
  for (let i = 1; i < BPP_BY_NOISE.length; i++) {
    const [n0, b0] = BPP_BY_NOISE[i - 1]!;
    const [n1, b1] = BPP_BY_NOISE[i]!;
    if (bpp <= b1) return n0 + ((bpp - b0) / (b1 - b0)) * (n1 - n0);
  }
  return MAX_NOISE;
}

function bitsPerPixelForNoise(noise: number): number {
  for (let i = 1; i < BPP_BY_NOISE.length; i++) {
    const [n0, b0] = BPP_BY_NOISE[i - 1]!;
    const [n1, b1] = BPP_BY_NOISE[i]!;
    if (noise <= n1) return b0 + ((noise - n0) / (n1 - n0)) * (b1 - b0);
  }
  return BPP_BY_NOISE[BPP_BY_NOISE.length - 1]![1];
}

/** The target size of one image: the mixture described above, clipped to the ImageNet-like range. */
export function drawJpegTargetBytes(random: SeededRandom): number {
  const small = random.float() < JPEG_SMALL_SHARE;
  const bytes = small
    ? JPEG_MIN_BYTES * Math.pow(JPEG_SMALL_MAX_BYTES / JPEG_MIN_BYTES, random.float())
    : JPEG_MEDIAN_BYTES * Math.exp(JPEG_SIZE_SIGMA * random.normal());
  return Math.round(Math.min(JPEG_MAX_BYTES, Math.max(JPEG_MIN_BYTES, bytes)));
}

// Offset lookup: CLAMP_TO_BYTE[v + CLAMP_OFFSET] is v clamped to 0..255, without branches in the pixel loops.
const CLAMP_OFFSET = 512;
const CLAMP_TO_BYTE = new Uint8Array(CLAMP_OFFSET * 2 + 256);
for (let i = 0; i < CLAMP_TO_BYTE.length; i++) CLAMP_TO_BYTE[i] = Math.max(0, Math.min(255, i - CLAMP_OFFSET));

interface Scene {
  width: number;
  height: number;
  pixels: Uint8Array;
}

/** Gradient background and a few solid shapes: the low-frequency part of the image. */
function drawScene(random: SeededRandom, width: number, height: number): Scene {
  const pixels = new Uint8Array(width * height * CHANNELS);
  const from = [random.int(256), random.int(256), random.int(256)];
  const to = [random.int(256), random.int(256), random.int(256)];
  const slopeX = random.float(); // share of the gradient along x; the rest runs along y
  const [r0, g0, b0] = from as [number, number, number];
  const [dr, dg, db] = [to[0]! - r0, to[1]! - g0, to[2]! - b0];
  const tx = slopeX / width;
  for (let y = 0; y < height; y++) {
    const ty = ((1 - slopeX) * y) / height;
    let i = y * width * CHANNELS;
    for (let x = 0; x < width; x++) {
      const t = tx * x + ty; // in [0, 1): values stay within the two colours, no clamping needed
      pixels[i++] = r0 + dr * t;
      pixels[i++] = g0 + dg * t;
      pixels[i++] = b0 + db * t;
    }
  }
  const shapes = 2 + random.int(5);
  for (let s = 0; s < shapes; s++) {
    const cx = random.int(width);
    const cy = random.int(height);
    const rx = 8 + random.int(Math.max(1, Math.floor(width / 3)));
    const ry = 8 + random.int(Math.max(1, Math.floor(height / 3)));
    const colour = [random.int(256), random.int(256), random.int(256)];
    const ellipse = random.int(2) === 1;
    for (let y = Math.max(0, cy - ry); y < Math.min(height, cy + ry); y++) {
      for (let x = Math.max(0, cx - rx); x < Math.min(width, cx + rx); x++) {
        if (ellipse) {
          const dx = (x - cx) / rx;
          const dy = (y - cy) / ry;
          if (dx * dx + dy * dy > 1) continue;
        }
        const i = (y * width + x) * CHANNELS;
        pixels[i] = colour[0]!;
        pixels[i + 1] = colour[1]!;
        pixels[i + 2] = colour[2]!;
      }
    }
  }
  return { width, height, pixels };
}

/** Adds uniform noise of +-noise/2 per channel; one xorshift step feeds three channels. */
function addNoise(scene: Scene, noise: number, seed: number): Uint8Array {
  const out = new Uint8Array(scene.pixels.length);
  const delta = new Int16Array(256);
  for (let k = 0; k < 256; k++) delta[k] = Math.round(((k - 128) * noise) / 256) + CLAMP_OFFSET;
  const src = scene.pixels;
  let s = seed | 1;
  for (let i = 0; i < src.length; i += CHANNELS) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = CLAMP_TO_BYTE[src[i]! + delta[s & 255]!]!;
    out[i + 1] = CLAMP_TO_BYTE[src[i + 1]! + delta[(s >>> 8) & 255]!]!;
    out[i + 2] = CLAMP_TO_BYTE[src[i + 2]! + delta[(s >>> 16) & 255]!]!;
  }
  return out;
}

async function encodeJpeg(scene: Scene, noise: number, seed: number): Promise<Buffer> {
  return sharpLib()(addNoise(scene, noise, seed), { raw: { width: scene.width, height: scene.height, channels: CHANNELS } })
    // Standard Huffman tables, as most cameras write them: optimised tables cost a second pass (2x encode time).
    .jpeg({ quality: JPEG_QUALITY, optimiseCoding: false })
    .toBuffer();
}

export interface SyntheticJpeg {
  bytes: Buffer;
  width: number;
  height: number;
  targetBytes: number;
  noise: number;
}

/** Draws and encodes one ImageNet-like JPEG; deterministic for `seed`. */
export async function makeImageNetLikeJpeg(seed: number): Promise<SyntheticJpeg> {
  const random = new SeededRandom(seed);
  const targetBytes = drawJpegTargetBytes(random);
  const [width, height] = random.weighted(IMAGENET_DIMENSIONS);
  const scene = drawScene(random, width, height);
  const noiseSeed = random.nextUint32();
  const pixels = width * height;
  let noise = noiseForBitsPerPixel((targetBytes * 8) / pixels);
  let bytes = await encodeJpeg(scene, noise, noiseSeed);
  const miss = bytes.length / targetBytes;
  if ((miss > 4 / 3 || miss < 3 / 4) && noise > 0 && noise < MAX_NOISE) {
    // Shapes shift the baseline; scale the table by what this image really did and try once more.
    const scale = (bytes.length * 8) / pixels / bitsPerPixelForNoise(noise);
    noise = noiseForBitsPerPixel((targetBytes * 8) / pixels / scale);
    bytes = await encodeJpeg(scene, noise, noiseSeed);
  }
  return { bytes, width, height, targetBytes, noise };
}
