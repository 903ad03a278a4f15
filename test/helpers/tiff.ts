/**
 * Hand-made TIFFs for the tests of tiff-subfiles.ts and the image passes: uncompressed 8-bit grey images chained as
 * IFDs, each with its NewSubfileType (254), in either byte order, classic or BigTIFF. Written from the TIFF 6.0 and
 * BigTIFF layouts, not by the code under test; libvips reads them (the tests check it does).
 */
export interface TiffImage {
  width: number;
  height: number;
  /** NewSubfileType: 0 a full image, 1 a reduced-resolution one, 2 a page of a multi-page file. */
  subfile: number;
  /** Every pixel's value. */
  grey: number;
}

export function makeTiff(images: readonly TiffImage[], options: { bigEndian?: boolean; bigTiff?: boolean } = {}): Uint8Array {
  const le = options.bigEndian !== true;
  const big = options.bigTiff === true;
  const TAGS = 8; // 254, 256, 257, 258, 259, 262, 273, 279 (ascending, as TIFF wants); one strip per image
  const ifdBytes = (big ? 8 : 2) + TAGS * (big ? 20 : 12) + (big ? 8 : 4);
  let end = big ? 16 : 8;
  const pixelsAt = images.map((im) => {
    const at = end;
    end += (im.width * im.height + 1) & ~1; // IFDs start on a word boundary
    return at;
  });
  const ifdAt = images.map((_, i) => end + i * ifdBytes);
  end += images.length * ifdBytes;
  const out = new Uint8Array(end);
  const v = new DataView(out.buffer);
  const offset = (at: number, value: number): void => (big ? v.setBigUint64(at, BigInt(value), le) : v.setUint32(at, value, le));
  v.setUint16(0, le ? 0x4949 : 0x4d4d, false);
  v.setUint16(2, big ? 43 : 42, le);
  if (big) {
    v.setUint16(4, 8, le);
    v.setUint16(6, 0, le);
  }
  offset(big ? 8 : 4, ifdAt[0] as number);
  images.forEach((im, i) => {
    out.fill(im.grey, pixelsAt[i], (pixelsAt[i] as number) + im.width * im.height);
    let p = ifdAt[i] as number;
    if (big) v.setBigUint64(p, BigInt(TAGS), le);
    else v.setUint16(p, TAGS, le);
    p += big ? 8 : 2;
    const entry = (tag: number, type: 3 | 4, value: number): void => {
      v.setUint16(p, tag, le);
      v.setUint16(p + 2, type, le);
      if (big) v.setBigUint64(p + 4, 1n, le);
      else v.setUint32(p + 4, 1, le);
      const at = p + (big ? 12 : 8);
      if (type === 3) v.setUint16(at, value, le);
      else v.setUint32(at, value, le);
      p += big ? 20 : 12;
    };
    entry(254, 4, im.subfile);
    entry(256, 3, im.width);
    entry(257, 3, im.height);
    entry(258, 3, 8); // BitsPerSample
    entry(259, 3, 1); // no compression
    entry(262, 3, 1); // BlackIsZero
    entry(273, 4, pixelsAt[i] as number); // StripOffsets
    entry(279, 4, im.width * im.height); // StripByteCounts
    offset(p, i + 1 < images.length ? (ifdAt[i + 1] as number) : 0);
  });
  return out;
}
