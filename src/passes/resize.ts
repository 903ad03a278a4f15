/** `resize=WxH[:fit]`: scales every image member, keeping its format and extension. */
import { encodeKeeping, mapImageMembers, openImage } from './image-codec.js';
import type { Pass } from './pass.js';
import { checkInteger, checkOneOf } from './validate.js';

/** sharp's limit for output dimensions. */
export const MAX_IMAGE_DIMENSION = 16384;

export const RESIZE_FITS = ['inside', 'cover', 'contain', 'fill', 'outside'] as const;
export type ResizeFit = (typeof RESIZE_FITS)[number];

export interface ResizeOptions {
  width: number;
  height: number;
  /**
   * How the image meets the box (sharp's `fit`): `inside` (default) keeps the aspect ratio within WxH,
   * `cover` fills WxH and crops the centre, `contain` fits inside and pads with black to exactly WxH,
   * `fill` stretches to exactly WxH, `outside` keeps the aspect ratio covering WxH without cropping.
   * Images smaller than the box are enlarged, so output sizes do not depend on input sizes.
   */
  fit?: ResizeFit;
}

/**
 * A pass that resizes every image member (jpg, png, webp, gif, tiff, avif) after applying its EXIF orientation;
 * the member keeps its extension and is re-encoded in the format its extension names. Every image member of a
 * sample is resized alike, segmentation masks included (use a custom pass for nearest-neighbour masks).
 * @example resizePass({ width: 256, height: 256, fit: 'cover' })
 */
export function resizePass(options: ResizeOptions): Pass {
  const width = checkInteger(options.width, 1, MAX_IMAGE_DIMENSION, 'width');
  const height = checkInteger(options.height, 1, MAX_IMAGE_DIMENSION, 'height');
  const fit = checkOneOf(options.fit ?? 'inside', RESIZE_FITS, 'fit');
  return {
    name: 'resize',
    params: { width, height, fit },
    async run(sample) {
      const members = await mapImageMembers(sample.key, sample.members, 'resize', async (bytes, format, ext) => ({
        ext,
        bytes: await (await encodeKeeping(openImage(bytes).resize({ width, height, fit }), format)).toBuffer(),
      }));
      return { key: sample.key, members };
    },
  };
}
