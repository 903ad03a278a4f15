/** The image passes (resize, normalize, format) on the image fixtures, and imageConcurrency. */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { imageConcurrency } from '../../src/passes/image-concurrency.js';
import { decodeNpy } from '../../src/passes/npy.js';
import { tensorNormalizePass } from '../../src/passes/normalize.js';
import { DEFAULT_MAX_MEMBER_BYTES } from '../../src/read/dataset-options.js';
import type { Pass } from '../../src/passes/pass.js';
import { errorOf } from '../helpers/error-of.js';
import { spec, member, usePassFixtures } from '../helpers/pass-fixtures.js';

const { fixture, run } = usePassFixtures();
const meta = (bytes: Uint8Array) => sharp(bytes).metadata();

describe('resize', () => {
  it.each([
    ['inside', 32, 24],
    ['cover', 32, 32],
    ['contain', 32, 32],
    ['fill', 32, 32],
    ['outside', 43, 32],
  ])('fit %s turns the 64x48 JPEG into %dx%d JPEG', async (fit, width, height) => {
    const out = await run(spec(`resize=32x32:${fit}`), 'cat/001');
    const m = await meta(member(out, 'jpg'));
    expect([m.format, m.width, m.height]).toEqual(['jpeg', width, height]);
  });

  it('contain pads with black bars', async () => {
    const out = await run(spec('resize=32x32:contain'), 'cat/001');
    const { data, info } = await sharp(member(out, 'jpg')).raw().toBuffer({ resolveWithObject: true });
    const topRow = data.subarray(0, info.width * info.channels);
    expect(Math.max(...topRow)).toBeLessThan(16); // a 4-pixel bar above the 32x24 picture
  });

  it('applies EXIF orientation and strips metadata', async () => {
    expect((await meta(member(fixture('dog/004').sample, 'jpg'))).orientation).toBe(6);
    const out = await run(spec('resize=20x20'), 'dog/004'); // stored 40x30, displayed 30x40
    const m = await meta(member(out, 'jpg'));
    expect([m.width, m.height, m.orientation, m.exif]).toEqual([15, 20, undefined, undefined]);
  });

  it('keeps PNG with alpha and WebP in their formats; other members are untouched', async () => {
    const png = await meta(member(await run(spec('resize=24x24'), 'cat/002'), 'png'));
    expect([png.format, png.width, png.height, png.channels]).toEqual(['png', 18, 24, 4]);
    const webp = await meta(member(await run(spec('resize=16x16'), 'dog/003'), 'webp'));
    expect([webp.format, webp.width, webp.height]).toEqual(['webp', 16, 16]);
    const cat = await run(spec('resize=8x8'), 'cat/001');
    expect(Object.keys(cat.members)).toEqual(['jpg', 'txt']);
    expect(cat.members.txt).toBe(fixture('cat/001').sample.members.txt);
  });

  it('validates its options', () => {
    expect(() => spec('resize=0x10')).toThrow('Expected integer between 1 and 16384 for width but received 0 of type number');
    expect(() => spec('resize=10x99999')).toThrow('for height but received 99999');
    expect(() => spec('resize=10x10:squash')).toThrow('Expected one of inside, cover, contain, fill, outside for fit but received "squash"');
    expect(() => spec('resize=10')).toThrow(/Expected resize=WxH/);
  });
});

describe('normalize', () => {
  it('without a value stretches contrast and keeps the format', async () => {
    // A grey ramp over 100..145: a low-contrast image.
    const ramp = Buffer.from(Array.from({ length: 256 }, (_, i) => 100 + Math.floor(i / 16) * 3));
    const png = await sharp(ramp, { raw: { width: 16, height: 16, channels: 1 } }).png().toBuffer();
    const out = await spec('normalize').run({ key: 'k', members: { png } }, {});
    if (out === 'skip') throw new Error('skip');
    expect((await meta(member(out, 'png'))).format).toBe('png');
    const { data } = await sharp(member(out, 'png')).raw().toBuffer({ resolveWithObject: true });
    expect(Math.max(...data) - Math.min(...data)).toBeGreaterThan(200);
  });

  it('with mean:std writes a float32 (C,H,W) .npy equal to the hand computation on the known pixels', async () => {
    const mean = [0.485, 0.456, 0.406];
    const std = [0.229, 0.224, 0.225];
    const out = await run(spec(`normalize=${mean.join(',')}:${std.join(',')}`), 'cat/002');
    expect(Object.keys(out.members)).toEqual(['npy']);
    const tensor = decodeNpy(member(out, 'npy'));
    const [w, h] = [48, 64];
    expect(tensor.shape).toEqual([3, h, w]);
    // cat/002.png is lossless: fixtures/make-images.mjs defines every pixel (alpha dropped).
    const pixel = (c: number, x: number, y: number): number =>
      c === 0 ? Math.round((255 * x) / (w - 1)) : c === 1 ? Math.round((255 * y) / (h - 1)) : x < w / 2 && y < h / 2 ? 255 : 0;
    const mismatches: string[] = [];
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const expected = Math.fround((pixel(c, x, y) / 255 - (mean[c] as number)) / (std[c] as number));
          const actual = tensor.data[c * h * w + y * w + x];
          if (actual !== expected) mismatches.push(`c${c} x${x} y${y}: ${actual} != ${expected}`);
        }
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('expands grey to 3 channels, or keeps 1 channel for one mean; applies orientation', async () => {
    const rgb = decodeNpy(member(await run(spec('normalize=0.5,0.5,0.5:0.5,0.5,0.5'), 'dog/005'), 'npy'));
    expect(rgb.shape).toEqual([3, 32, 32]);
    const plane = 32 * 32;
    expect(Array.from(rgb.data.subarray(0, plane))).toEqual(Array.from(rgb.data.subarray(2 * plane)));
    const grey = decodeNpy(member(await run(spec('normalize=0.5:0.25'), 'dog/005'), 'npy'));
    expect(grey.shape).toEqual([1, 32, 32]);
    expect(grey.data[31]).toBe(Math.fround((255 / 255 - 0.5) / 0.25)); // top-right pixel is white
    const rotated = decodeNpy(member(await run(spec('normalize=0.5:0.5'), 'dog/004'), 'npy'));
    expect(rotated.shape).toEqual([1, 40, 30]);
  });

  it('keeps the precision of 16-bit images: values are pixel / 65535, RGB and grey', async () => {
    // sharp makes a true 16-bit PNG from 16-bit samples tagged rgb16 / grey16 (a Uint16Array's raw depth is ushort)
    const rgb = Uint16Array.from([65535, 32768, 0, 1000, 2000, 3000]);
    const png = await sharp(rgb, { raw: { width: 2, height: 1, channels: 3 } }).toColourspace('rgb16').png().toBuffer();
    expect((await meta(png)).depth).toBe('ushort');
    const out = await spec('normalize=0,0,0:1,1,1').run({ key: 'k', members: { png } }, {});
    if (out === 'skip') throw new Error('skip');
    const t = decodeNpy(member(out, 'npy'));
    expect(t.shape).toEqual([3, 1, 2]);
    // planar: R of both pixels, then G, then B; 8-bit rounding would give 128/255 for 32768 and 4/255 for 1000
    expect(Array.from(t.data)).toEqual([65535, 1000, 32768, 2000, 0, 3000].map((v) => Math.fround(v / 65535)));
    const grey = Uint16Array.from([0, 20000, 40000, 60000]);
    const greyPng = await sharp(grey, { raw: { width: 4, height: 1, channels: 1 } }).toColourspace('grey16').png().toBuffer();
    const g = await spec('normalize=0.5:0.25').run({ key: 'k', members: { png: greyPng } }, {});
    if (g === 'skip') throw new Error('skip');
    expect(Array.from(decodeNpy(member(g, 'npy')).data)).toEqual([0, 20000, 40000, 60000].map((v) => Math.fround((v / 65535 - 0.5) / 0.25)));
  });

  it('fails a sample whose tensor would exceed the member limit (INPUT, before decoding), naming it and the sizes', async () => {
    // cat/002 is 48x64: 3 x 64 x 48 float32 plus numpy's 128-byte header
    const bytes = 3 * 64 * 48 * 4 + 128;
    const at = (maxMemberBytes: number) => tensorNormalizePass({ mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], maxMemberBytes });
    expect(member(await run(at(bytes), 'cat/002'), 'npy').length).toBe(bytes);
    const err = await run(at(bytes - 1), 'cat/002').catch((e: unknown) => e);
    expect(isShardkitError(err) && err.code).toBe(ErrorCodes.INPUT);
    expect((err as Error).message).toBe(`Image member png of sample cat/002 is 48x64: its .npy tensor would be ${bytes} bytes, over the ${bytes - 1}-byte member limit; resize it first (--pass resize=WxH before normalize)`);
    // the default is the largest member a reader takes by default
    expect(() => at(DEFAULT_MAX_MEMBER_BYTES + 1)).toThrow(`Expected integer between 1 and ${DEFAULT_MAX_MEMBER_BYTES} for maxMemberBytes`);
  });

  it('validates its lists', () => {
    expect(() => spec('normalize=0.1,0.2,0.3:0.3')).toThrow('as many std values as mean values');
    expect(() => spec('normalize=0.1,0.2:0.3,0.4')).toThrow('Expected 1 or 3 finite numbers');
    expect(() => spec('normalize=0.5:0')).toThrow('std values above 0');
    for (const tiny of ['normalize=0.5:1e-50', 'normalize=1e300:1', 'normalize=0.5,0.5,0.5:1,1,1e-39']) {
      expect(() => spec(tiny), tiny).toThrow(/^Expected mean and std for normalize that keep \(x - mean\) \/ std a finite float32 for x in \[0, 1\] but received mean/);
    }
    expect(() => spec('normalize=0.5:1e-38')).not.toThrow();
    expect(() => spec('normalize=a:b')).toThrow(/Expected normalize or normalize=MEAN:STD/);
  });
});

describe('format', () => {
  it('re-encodes and renames the extension', async () => {
    const jpg = await run(spec('format=jpeg'), 'cat/002');
    expect(Object.keys(jpg.members)).toEqual(['jpg']);
    const m = await meta(member(jpg, 'jpg'));
    expect([m.format, m.width, m.height]).toEqual(['jpeg', 48, 64]);
    const png = await run(spec('format=png'), 'dog/003');
    expect((await meta(member(png, 'png'))).format).toBe('png');
    const seg = await spec('format=webp').run({ key: 'k', members: { 'seg.png': member(fixture('cat/002').sample, 'png'), txt: new Uint8Array(1) } }, {});
    if (seg === 'skip') throw new Error('skip');
    expect(Object.keys(seg.members)).toEqual(['seg.webp', 'txt']);
  });

  it('honours quality', async () => {
    const low = member(await run(spec('format=jpg:10'), 'dog/003'), 'jpg');
    const high = member(await run(spec('format=jpeg:95'), 'dog/003'), 'jpg');
    expect(low.length).toBeLessThan(high.length);
    expect(spec('format=webp').params).toEqual({ format: 'webp', quality: 90 });
  });

  it('fails a sample (INPUT, which --on-error skip skips) whose two members would get one extension, naming both', async () => {
    const png = member(fixture('cat/002').sample, 'png');
    const jpg = member(fixture('cat/001').sample, 'jpg');
    const err = await errorOf(spec('format=jpeg').run({ key: 'k', members: { jpg, png } }, {}));
    expect(isShardkitError(err, ErrorCodes.INPUT) && err.message).toBe('Sample k: members jpg and png would both become jpg in pass format; keep one of them (--exclude)');
    const both = await errorOf(spec('normalize=0.5:0.5').run({ key: 'k', members: { jpg, png } }, {}));
    expect(isShardkitError(both, ErrorCodes.INPUT) && both.message).toBe('Sample k: members jpg and png would both become npy in pass normalize; keep one of them (--exclude)');
  });

  it('validates its options', () => {
    expect(() => spec('format=gif')).toThrow(/Expected format=jpeg\|webp\[:quality\] or format=png/);
    expect(() => spec('format=png:50')).toThrow(/for a format with quality/);
    expect(() => spec('format=jpeg:0')).toThrow('Expected integer between 1 and 100 for quality but received 0');
  });
});

describe('undecodable images and non-images', () => {
  it.each(['resize=8x8', 'normalize', 'normalize=0.5:0.5', 'format=png'])('%s names the key, member and reason', async (text) => {
    const err = await errorOf(run(spec(text), 'broken/006'));
    expect(isShardkitError(err, ErrorCodes.INPUT)).toBe(true);
    const message = (err as Error).message;
    expect(message).toContain('broken/006');
    expect(message).toContain('member jpg');
    expect(message).toMatch(/premature end|corrupt/i);
    expect(message).not.toContain('\n');
  });

  it('passes a sample without images through untouched', async () => {
    const sample: Sample = { key: 'k', members: { txt: new Uint8Array([1, 2]), json: new Uint8Array([3]) } };
    for (const text of ['resize=8x8', 'normalize', 'normalize=0.5:0.5', 'format=png']) {
      const out = await spec(text).run(sample, {});
      expect(out).toEqual(sample);
    }
  });
});

describe('depth and greyness', () => {
  it('resize, format and contrast normalize keep 16-bit and grey images as they are where the format can store them', async () => {
    const rgb16 = await sharp(new Uint16Array(4 * 4 * 3).map((_, i) => [1000, 2000, 60000][i % 3] as number), { raw: { width: 4, height: 4, channels: 3 } })
      .toColourspace('rgb16')
      .png()
      .toBuffer();
    const grey = await sharp(Buffer.alloc(16 * 16, 90), { raw: { width: 16, height: 16, channels: 1 } }).toColourspace('b-w').jpeg().toBuffer();
    const greyAlpha = await sharp(Buffer.alloc(8 * 8 * 2, 200), { raw: { width: 8, height: 8, channels: 2 } }).toColourspace('b-w').png().toBuffer();
    const shape = async (text: string, ext: string, bytes: Buffer) => {
      const out = await spec(text).run({ key: 'k', members: { [ext]: bytes } }, {});
      if (out === 'skip') throw new Error('skip');
      const [outExt, outBytes] = Object.entries(out.members)[0] as [string, Uint8Array];
      const m = await meta(outBytes);
      return `${outExt} ${m.channels} ${m.depth}`;
    };
    for (const text of ['resize=2x2', 'format=png', 'normalize']) {
      expect(await shape(text, 'png', rgb16), text).toBe('png 3 ushort');
      expect(await shape(text, 'png', greyAlpha), text).toBe('png 2 uchar');
    }
    expect(await shape('resize=8x8', 'jpg', grey)).toBe('jpg 1 uchar');
    expect(await shape('format=png', 'jpg', grey)).toBe('png 1 uchar');
    // WebP stores no grey and no 16 bits: RGB, 8-bit
    expect(await shape('format=webp', 'png', rgb16)).toBe('webp 3 uchar');
    // 16-bit values survive, not rounded to 8 bits and back
    const out = await spec('resize=2x2').run({ key: 'k', members: { png: rgb16 } }, {});
    if (out === 'skip') throw new Error('skip');
    const px = await sharp(member(out, 'png')).toColourspace('rgb16').raw({ depth: 'ushort' }).toBuffer();
    expect(Array.from(new Uint16Array(px.buffer, px.byteOffset, 3))).toEqual([1000, 2000, 60000]);
  });
});

describe('animated and multi-page images', () => {
  it('fail their sample (INPUT) in every image pass instead of silently losing all frames but the first', async () => {
    const [w, h, frames] = [10, 6, 3];
    const px = Buffer.alloc(w * h * frames * 4);
    for (let f = 0; f < frames; f++) for (let p = 0; p < w * h; p++) px.set([f * 100, 50, 0, 255], (f * w * h + p) * 4);
    const raw = { raw: { width: w, height: h * frames, channels: 4 as const, pageHeight: h } };
    const gif = await sharp(px, raw).gif({ loop: 0, delay: [100, 100, 100] }).toBuffer();
    const webp = await sharp(px, raw).webp({ loop: 0, delay: [100, 100, 100], lossless: true }).toBuffer();
    for (const [ext, bytes] of [['gif', gif], ['webp', webp]] as const) {
      for (const text of ['resize=20x12', 'format=png', 'normalize', 'normalize=0.5:0.5']) {
        const err = await errorOf(spec(text).run({ key: 'k', members: { [ext]: bytes } }, {}));
        expect(isShardkitError(err, ErrorCodes.INPUT) && err.message, `${text} ${ext}`).toBe(`Image member ${ext} of sample k has 3 frames or pages; pass ${text.split('=')[0]} handles single-frame images only (convert it first, or --on-error skip)`);
      }
    }
    // one frame is an image like any other
    const still = await sharp(px.subarray(0, w * h * 4), { raw: { width: w, height: h, channels: 4 } }).gif().toBuffer();
    const out = await spec('resize=20x12').run({ key: 'k', members: { gif: still } }, {});
    if (out === 'skip') throw new Error('skip');
    expect([(await meta(member(out, 'gif'))).width, (await meta(member(out, 'gif'))).height]).toEqual([20, 12]);
  });
});

describe('determinism', () => {
  it('gives the same bytes on every run and from fresh pass objects', async () => {
    const chain = (): Pass[] => [spec('resize=40x40:cover'), spec('normalize'), spec('format=webp:80')];
    const runChain = async (key: string): Promise<Sample> => {
      let sample: Sample | 'skip' = fixture(key).sample;
      for (const pass of chain()) {
        if (sample === 'skip') break;
        sample = await pass.run(sample, {});
      }
      if (sample === 'skip') throw new Error('skip');
      return sample;
    };
    for (const key of ['cat/001', 'cat/002', 'dog/003', 'dog/004']) {
      const a = await runChain(key);
      const b = await runChain(key);
      expect(Buffer.from(member(a, 'webp')).equals(Buffer.from(member(b, 'webp')))).toBe(true);
    }
  });
});

describe('imageConcurrency', () => {
  it('uses one image per core and one libvips thread per image', () => {
    expect(imageConcurrency(2)).toEqual({ jobs: 2, sharpThreads: 1, uvThreadpoolSize: 6 });
    expect(imageConcurrency(64).jobs).toBe(64);
    expect(() => imageConcurrency(0)).toThrow('Expected integer between 1');
    expect(sharp.concurrency()).toBe(1);
  });
});
