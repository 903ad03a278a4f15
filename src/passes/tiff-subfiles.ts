/**
 * Which images a TIFF holds, from its chain of IFDs (image file directories), so that image passes can tell a
 * multi-page TIFF from one image with previews. libvips (sharp's `pages`) counts every IFD of the chain as a page;
 * but an IFD whose NewSubfileType (tag 254) has bit 0 set is a reduced-resolution version of another image of the
 * file (a thumbnail, a pyramid level), not a page of its own (TIFF 6.0, section 8; the older SubfileType, tag 255,
 * says the same with value 2).
 *
 * Classic TIFF (42) and BigTIFF (43), either byte order. Only the chain's IFD headers and tags 254/255 are read.
 */

/** How many IFDs a chain may have before the reader gives up (a loop-free chain that long is no image we pass). */
const MAX_IFDS = 4096;

const NEW_SUBFILE_TYPE = 254;
const SUBFILE_TYPE = 255;
/** NewSubfileType bit 0: a reduced-resolution version of another image in this file. */
const REDUCED_RESOLUTION = 1;
/** SubfileType's value for the same. */
const OLD_REDUCED_RESOLUTION = 2;

/** Per IFD of the chain, in order: true when it is a reduced-resolution image. Undefined when `bytes` is no TIFF this reader follows to the end. */
export function tiffReducedFlags(bytes: Uint8Array): boolean[] | undefined {
  if (bytes.length < 8) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const order = view.getUint16(0, false);
  if (order !== 0x4949 && order !== 0x4d4d) return undefined; // II or MM
  const le = order === 0x4949;
  const magic = view.getUint16(2, le);
  const big = magic === 43;
  if (!big && magic !== 42) return undefined;
  if (big && (bytes.length < 16 || view.getUint16(4, le) !== 8 || view.getUint16(6, le) !== 0)) return undefined;
  const offsetAt = (at: number): number => (big ? Number(view.getBigUint64(at, le)) : view.getUint32(at, le));
  const countBytes = big ? 8 : 2;
  const entryBytes = big ? 20 : 12;
  const valueAt = big ? 12 : 8; // where an entry's value (or its offset) starts
  const flags: boolean[] = [];
  const seen = new Set<number>();
  let ifd = offsetAt(big ? 8 : 4);
  while (ifd !== 0) {
    if (seen.has(ifd) || flags.length === MAX_IFDS || ifd + countBytes > bytes.length) return undefined;
    seen.add(ifd);
    const count = big ? Number(view.getBigUint64(ifd, le)) : view.getUint16(ifd, le);
    const entries = ifd + countBytes;
    const next = entries + count * entryBytes;
    if (next + (big ? 8 : 4) > bytes.length) return undefined;
    let reduced = false;
    for (let e = entries; e < next; e += entryBytes) {
      const tag = view.getUint16(e, le);
      if (tag !== NEW_SUBFILE_TYPE && tag !== SUBFILE_TYPE) continue;
      const type = view.getUint16(e + 2, le);
      const value = type === 3 ? view.getUint16(e + valueAt, le) : type === 4 ? view.getUint32(e + valueAt, le) : undefined; // SHORT or LONG
      if (value === undefined) return undefined;
      if (tag === NEW_SUBFILE_TYPE ? (value & REDUCED_RESOLUTION) !== 0 : value === OLD_REDUCED_RESOLUTION) reduced = true;
    }
    flags.push(reduced);
    ifd = offsetAt(next);
  }
  return flags.length === 0 ? undefined : flags;
}

/**
 * True when a TIFF holds one image: its first IFD is a full-resolution image (the one libvips decodes by default)
 * and every other IFD is a reduced-resolution version (a thumbnail or a pyramid level).
 */
export function isOneTiffImage(bytes: Uint8Array): boolean {
  const flags = tiffReducedFlags(bytes);
  return flags !== undefined && flags[0] === false && flags.every((reduced, i) => i === 0 || reduced);
}
