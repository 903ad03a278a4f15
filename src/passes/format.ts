/** `format=jpeg|webp[:quality]` or `format=png`: re-encodes every image member and renames its extension to match. */
import { encodeKeeping, mapImageMembers, openImage, replaceLastExt, type ImageFormat } from './image-codec.js';
import type { Pass } from './pass.js';
import { checkInteger, checkOneOf } from './validate.js';

export const OUTPUT_FORMATS = ['jpeg', 'webp', 'png'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

const EXT_BY_FORMAT: Record<OutputFormat, string> = { jpeg: 'jpg', webp: 'webp', png: 'png' };

export interface FormatOptions {
  format: OutputFormat;
  /** 1..100 for jpeg and webp (default 90); not accepted for png, which is lossless. */
  quality?: number;
}

/**
 * A pass that re-encodes every image member (EXIF orientation applied, metadata stripped) and replaces the last
 * component of its extension: `key.png` -> `key.jpg`, `key.seg.png` -> `key.seg.webp`, `key.jpeg` -> `key.jpg`.
 * @throws ShardkitError INPUT (from run) when two members of a sample would get one extension.
 * @example formatPass({ format: 'webp', quality: 85 })
 */
export function formatPass(options: FormatOptions): Pass {
  const format = checkOneOf(options.format, OUTPUT_FORMATS, 'format');
  let quality: number | undefined;
  if (options.quality !== undefined) {
    if (format === 'png') checkOneOf('png', ['jpeg', 'webp'], 'a format with quality');
    quality = checkInteger(options.quality, 1, 100, 'quality');
  }
  const params: Record<string, unknown> = { format };
  if (format !== 'png') params.quality = quality ?? 90;
  const target: ImageFormat = format;
  return {
    name: 'format',
    params,
    async run(sample) {
      const members = await mapImageMembers(sample.key, sample.members, 'format', async (bytes, _format, ext) => ({
        ext: replaceLastExt(ext, EXT_BY_FORMAT[format]),
        bytes: await (await encodeKeeping(openImage(bytes), target, quality)).toBuffer(),
      }));
      return { key: sample.key, members };
    },
  };
}
