/**
 * Decoding and re-encoding image members with sharp, the same way in every pass so output is deterministic:
 * EXIF orientation applied, metadata stripped (sharp's default: no timestamps or camera data leak into shards),
 * fixed encoder settings.
 */
import type { Sharp } from 'sharp';
import { sharpLib } from './sharp-lib.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { setMember } from '../../formats/sample.js';
import { isOneTiffImage } from './tiff-subfiles.js';

export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'gif' | 'tiff' | 'avif';

/** Image formats by the last component of a member's extension (`seg.png` -> png), lower-cased. */
const FORMAT_BY_EXT: ReadonlyMap<string, ImageFormat> = new Map([
  ['jpg', 'jpeg'],
  ['jpeg', 'jpeg'],
  ['png', 'png'],
  ['webp', 'webp'],
  ['gif', 'gif'],
  ['tif', 'tiff'],
  ['tiff', 'tiff'],
  ['avif', 'avif'],
]);

/** The image format a member's extension names, or undefined for members image passes leave alone. */
export function imageFormatOfExt(ext: string): ImageFormat | undefined {
  return FORMAT_BY_EXT.get(lastExtComponent(ext).toLowerCase());
}

function lastExtComponent(ext: string): string {
  return ext.slice(ext.lastIndexOf('.') + 1);
}

/** Replaces the last component of an extension: (`seg.png`, `npy`) -> `seg.npy`. */
export function replaceLastExt(ext: string, next: string): string {
  const dot = ext.lastIndexOf('.');
  return dot < 0 ? next : `${ext.slice(0, dot + 1)}${next}`;
}

/**
 * Opens image bytes for processing. `failOn: 'error'` rejects truncated and corrupt data but tolerates benign
 * decoder warnings (some real JPEG collections carry "extraneous bytes" warnings on perfectly viewable files).
 */
export function openImage(bytes: Uint8Array): Sharp {
  return sharpLib()(bytes, { failOn: 'error', autoOrient: true });
}

/**
 * Encoder settings used when a pass keeps the member's format. Quality 90 rather than sharp's 80 because a later
 * pass or the training augmentation may re-encode again; PNG stays lossless.
 */
export function encodeAs(image: Sharp, format: ImageFormat, quality?: number): Sharp {
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality: quality ?? 90 });
    case 'webp':
      return image.webp({ quality: quality ?? 90 });
    case 'png':
      return image.png();
    case 'gif':
      return image.gif();
    case 'tiff':
      return image.tiff({ quality: quality ?? 90 });
    case 'avif':
      return image.avif(quality === undefined ? {} : { quality });
  }
}

/** Output formats that store 16-bit samples, and that store one grey channel (sharp's WebP, GIF and AVIF are RGB). */
const SIXTEEN_BIT_FORMATS: ReadonlySet<ImageFormat> = new Set(['png', 'tiff']);
const GREY_FORMATS: ReadonlySet<ImageFormat> = new Set(['jpeg', 'png', 'tiff']);

/**
 * {@link encodeAs}, keeping the input's depth and greyness where `format` can store them. sharp writes 8-bit sRGB
 * unless told otherwise: a 16-bit depth map lost its precision and a grey image became three equal channels.
 */
export async function encodeKeeping(image: Sharp, format: ImageFormat, quality?: number): Promise<Sharp> {
  const { depth, space } = await image.metadata();
  const sixteen = depth === 'ushort' && SIXTEEN_BIT_FORMATS.has(format);
  const grey = (space === 'b-w' || space === 'grey16') && GREY_FORMATS.has(format);
  const kept = grey ? image.toColourspace(sixteen ? 'grey16' : 'b-w') : sixteen ? image.toColourspace('rgb16') : image;
  return encodeAs(kept, format, quality);
}

/** Runs a sharp pipeline, turning decoder failures into ShardkitError INPUT naming the sample and member. */
export async function runImage<T>(key: string, ext: string, pass: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ShardkitError) throw err;
    // libvips repeats its message over several lines; the first says what is wrong. It is no stable text: libvips
    // keeps one error buffer for all threads, so with images decoded at once one failure may carry another's words
    // or a cut-off line; a skipped sample's reason in the manifest leaves it out (stableMessage).
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new ShardkitError(ErrorCodes.INPUT, `Cannot decode image member ${ext} of sample ${key} in pass ${pass}`, {
      key,
      cause: err,
      ...(reason === undefined || reason === '' ? {} : { variable: reason }),
    });
  }
}

/**
 * Rebuilds a members record with one member renamed and/or replaced, keeping every member's position. The caller
 * has made sure the new name is free (mapImageMembers refuses two members that would share it).
 */
function replaceMember(members: Record<string, Uint8Array>, ext: string, nextExt: string, bytes: Uint8Array): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const [name, value] of Object.entries(members)) {
    if (name === ext) setMember(out, nextExt, bytes);
    else setMember(out, name, value);
  }
  return out;
}

/** Formats whose files may hold several frames or pages (animated GIF and WebP, multi-page TIFF, AVIF sequences). */
const MULTI_FRAME_FORMATS: ReadonlySet<ImageFormat> = new Set(['gif', 'webp', 'tiff', 'avif']);

/**
 * Image passes work on one frame: sharp decodes the first and drops the others, so an animated GIF came out as a
 * still one with exit 0. Such a member fails its sample instead (INPUT, which `--on-error skip` skips). Frames are
 * not resized one by one: a tensor has one frame, and a JPEG or PNG cannot hold several. A TIFF whose other IFDs are
 * only reduced-resolution versions of its first image (a thumbnail, a pyramid) is one image, which libvips counts as
 * several pages: its first image is the one decoded.
 */
async function refuseFrames(bytes: Uint8Array, format: ImageFormat, key: string, ext: string, pass: string): Promise<void> {
  const { pages } = await sharpLib()(bytes, { failOn: 'error' }).metadata();
  if (pages !== undefined && pages > 1 && !(format === 'tiff' && isOneTiffImage(bytes))) {
    throw new ShardkitError(ErrorCodes.INPUT, `Image member ${ext} of sample ${key} has ${pages} frames or pages; pass ${pass} handles single-frame images only (convert it first, or --on-error skip)`, { key });
  }
}

/**
 * Applies `transform` to every image member of a sample (one after another, in member order), leaving other
 * members as they are. `transform` returns the new extension and bytes.
 * @throws ShardkitError INPUT when a member is animated or has several pages (see refuseFrames), or when two members would get one name (`x.jpg` and `x.png` both becoming `x.npy`): that
 *   sample cannot be stored as it is, like an undecodable one, so `--on-error skip` leaves it out.
 */
export async function mapImageMembers(
  key: string,
  members: Record<string, Uint8Array>,
  pass: string,
  transform: (bytes: Uint8Array, format: ImageFormat, ext: string) => Promise<{ ext: string; bytes: Uint8Array }>,
): Promise<Record<string, Uint8Array>> {
  let out = members;
  /** Which member each renamed one came from, to name both in the error. */
  const renamedFrom = new Map<string, string>();
  for (const [ext, bytes] of Object.entries(members)) {
    const format = imageFormatOfExt(ext);
    if (format === undefined) continue;
    const result = await runImage(key, ext, pass, async () => {
      if (MULTI_FRAME_FORMATS.has(format)) await refuseFrames(bytes, format, key, ext, pass);
      return transform(bytes, format, ext);
    });
    if (result.ext !== ext && Object.hasOwn(out, result.ext)) {
      const other = renamedFrom.get(result.ext) ?? result.ext;
      throw new ShardkitError(ErrorCodes.INPUT, `Sample ${key}: members ${other} and ${ext} would both become ${result.ext} in pass ${pass}; keep one of them (--exclude)`, { key });
    }
    if (result.ext !== ext) renamedFrom.set(result.ext, ext);
    out = replaceMember(out, ext, result.ext, result.bytes);
  }
  return out;
}
