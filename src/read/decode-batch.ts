/**
 * Decodes the image members of a batch's samples (decode-image.ts), under a loader's decode concurrency bound; the
 * other members stay bytes, in their order. The sample's other fields (a mixture's `source`) are kept.
 */
import { setMember, type Sample } from '../../formats/sample.js';
import { decodeImage, type DecodedImage } from './decode-image.js';

export type DecodedMembers<T extends Sample> = Omit<T, 'members'> & { members: Record<string, Uint8Array | DecodedImage> };

/**
 * The samples with each member `isImage(ext)` says is an image decoded to pixels. `limit` runs each decode (the
 * loader's bound, which fails decodes of a stopped loader); `onDecoded` counts them.
 */
export function decodeBatchImages<T extends Sample>(
  samples: readonly T[],
  isImage: (ext: string) => boolean,
  limit: (fn: () => Promise<DecodedImage>) => Promise<DecodedImage>,
  onDecoded: () => void,
): Promise<Array<DecodedMembers<T>>> {
  return Promise.all(
    samples.map(async (sample) => {
      const members: Record<string, Uint8Array | DecodedImage> = {};
      const decoded: Array<Promise<void>> = [];
      for (const [ext, bytes] of Object.entries(sample.members)) {
        setMember(members, ext, bytes); // keeps member order; replaced below
        if (!isImage(ext)) continue;
        decoded.push(
          limit(() => decodeImage(bytes, sample.key, ext)).then((image) => {
            setMember(members, ext, image);
            onDecoded();
          }),
        );
      }
      await Promise.all(decoded);
      return { ...sample, members };
    }),
  );
}
