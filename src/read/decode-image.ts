/**
 * Loader-side decoding of members: image bytes (jpg, png, webp, gif, tiff, avif) to raw pixels with sharp.
 * Which members are decoded is decided once, from the loader's `decode` option, by extension.
 */
import { sharpLib } from '../passes/sharp-lib.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { imageFormatOfExt } from '../passes/image-codec.js';

/**
 * An image member decoded to raw pixels: `data` holds `height` rows of `width` pixels of `channels` interleaved
 * 8-bit channels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA), row-major, no padding: `data.length ===
 * width * height * channels`, and the pixel at (x, y) starts at `(y * width + x) * channels`. EXIF orientation
 * is applied (width and height are as displayed), the same way the pack passes read images. `data` is a fresh
 * buffer owned by the caller.
 */
export interface DecodedImage {
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
}

/** What to do with one member: keep its bytes or decode it as an image. */
export type MemberDecoding = 'none' | 'image';

/**
 * The loader's `decode` option: 'none' (default: members stay bytes), 'image' (every member whose extension
 * names an image format), or a map from extension to decoding for exact control (`{ jpg: 'image' }`; members
 * whose extension is not in the map stay bytes).
 */
export type DecodeOption = MemberDecoding | Readonly<Record<string, MemberDecoding>>;

/** A sample after decoding: image members are {@link DecodedImage}s, the others stay bytes. */
export interface DecodedSample {
  key: string;
  members: Record<string, Uint8Array | DecodedImage>;
}

/** Validates `decode` and returns the test "is this extension decoded as an image", or undefined for none. */
export function imageExtTest(decode: unknown): ((ext: string) => boolean) | undefined {
  if (decode === undefined || decode === 'none') return undefined;
  if (decode === 'image') return (ext) => imageFormatOfExt(ext) !== undefined;
  if (typeof decode === 'object' && decode !== null && !Array.isArray(decode)) {
    const images = new Set<string>();
    for (const [ext, how] of Object.entries(decode as Record<string, unknown>)) {
      if (how !== 'none' && how !== 'image') {
        throw new ShardkitError(
          ErrorCodes.INVALID_ARG,
          `Expected one of none, image for decode[${JSON.stringify(ext)}] but received ${String(how)} of type ${typeof how}`,
        );
      }
      if (how === 'image') images.add(ext);
    }
    return images.size === 0 ? undefined : (ext) => images.has(ext);
  }
  throw new ShardkitError(
    ErrorCodes.INVALID_ARG,
    `Expected one of none, image, or an object mapping extensions to none/image for decode but received ${String(decode)} of type ${typeof decode}`,
  );
}

/**
 * Decodes one image member to raw pixels. Decoder failures become SHARDKIT_ERR_INPUT naming the sample and
 * member: the stored bytes passed their checksum, so the member was not a decodable image when it was packed.
 */
export async function decodeImage(bytes: Uint8Array, key: string, ext: string): Promise<DecodedImage> {
  try {
    const { data, info } = await sharpLib()(bytes, { failOn: 'error', autoOrient: true }).raw().toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels: info.channels };
  } catch (err) {
    // libvips repeats its message over several lines; the first says what is wrong.
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new ShardkitError(ErrorCodes.INPUT, `Cannot decode image member "${ext}" of sample "${key}": ${reason}; decode it yourself or leave it out of decode`, {
      key,
      cause: err,
    });
  }
}
