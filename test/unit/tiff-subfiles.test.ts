/** TIFFs with several IFDs: which are one image with previews (tiff-subfiles.ts), and what the image passes do with them. */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import { isOneTiffImage, tiffReducedFlags } from '../../src/passes/tiff-subfiles.js';
import { errorOf } from '../helpers/error-of.js';
import { makeTiff, type TiffImage } from '../helpers/tiff.js';

const spec = (text: string) => parsePassSpec(text, { cwd: process.cwd() });

describe('image passes on multi-IFD TIFFs', () => {
  it('take a TIFF whose other IFDs are reduced-resolution versions (thumbnail, pyramid) as its first image, and refuse other multi-image TIFFs', async () => {
    const full = { width: 12, height: 8, subfile: 0, grey: 200 };
    for (const options of [{}, { bigEndian: true }, { bigTiff: true }, { bigTiff: true, bigEndian: true }]) {
      const withThumb = makeTiff([full, { width: 3, height: 2, subfile: 1, grey: 10 }, { width: 6, height: 4, subfile: 1, grey: 10 }], options);
      expect((await sharp(withThumb).metadata()).pages, JSON.stringify(options)).toBe(3); // libvips counts each IFD as a page
      const out = await spec('resize=6x4:fill').run({ key: 'k', members: { tif: withThumb } }, {});
      if (out === 'skip') throw new Error('skip');
      const px = await sharp(out.members.tif as Uint8Array).raw().toBuffer({ resolveWithObject: true });
      expect([px.info.width, px.info.height, px.data[0]], JSON.stringify(options)).toEqual([6, 4, 200]); // the full image, resized
      const refused = async (tiff: Uint8Array): Promise<unknown> => errorOf(spec('resize=6x4').run({ key: 'k', members: { tif: tiff } }, {}));
      // pages, a thumbnail first, or two full images: which one to keep is not ours to guess
      for (const images of [[full, { ...full, subfile: 2 }], [{ ...full, subfile: 1 }, full], [full, full], [full, { ...full, subfile: 1 }, full]]) {
        expect(isShardkitError(await refused(makeTiff(images, options)), ErrorCodes.INPUT), JSON.stringify([images, options])).toBe(true);
      }
    }
  });
});

describe('TIFF subfiles', () => {
  it('reads each IFD of the chain as reduced or not, and gives up on what it cannot follow', () => {
    const im = (subfile: number): TiffImage => ({ width: 2, height: 2, subfile, grey: 1 });
    for (const options of [{}, { bigEndian: true }, { bigTiff: true }]) {
      expect(tiffReducedFlags(makeTiff([im(0), im(1), im(2), im(3)], options))).toEqual([false, true, false, true]);
      expect(isOneTiffImage(makeTiff([im(0), im(1), im(1)], options))).toBe(true);
      expect(isOneTiffImage(makeTiff([im(0)], options))).toBe(true);
      expect(isOneTiffImage(makeTiff([im(0), im(2)], options))).toBe(false);
      expect(isOneTiffImage(makeTiff([im(1), im(0)], options))).toBe(false);
      const bytes = makeTiff([im(0), im(1)], options);
      for (let cut = 0; cut < bytes.length; cut++) {
        const flags = tiffReducedFlags(bytes.subarray(0, cut));
        if (flags !== undefined) expect(flags, `cut ${cut}`).toEqual([false, true]); // a cut in the pixels leaves the chain whole
      }
    }
    // a chain that loops back to its first IFD
    const loop = makeTiff([im(0), im(1)]);
    const v = new DataView(loop.buffer);
    const first = v.getUint32(4, true);
    const second = v.getUint32(first + 2 + 8 * 12, true);
    v.setUint32(second + 2 + 8 * 12, first, true);
    expect(tiffReducedFlags(loop)).toBeUndefined();
    expect(tiffReducedFlags(new TextEncoder().encode('not a tiff at all'))).toBeUndefined();
  });
});
