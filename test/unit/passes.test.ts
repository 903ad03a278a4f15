import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { configureSharpForPacking, imageConcurrency } from '../../src/passes/image-concurrency.js';
import { loadPassModule } from '../../src/passes/load-pass-module.js';
import { decodeNpy } from '../../src/passes/npy.js';
import { tensorNormalizePass } from '../../src/passes/normalize.js';
import { DEFAULT_MAX_MEMBER_BYTES } from '../../src/read/dataset-options.js';
import { parseCsvLabelTable, parseJsonLabelTable } from '../../src/passes/label-table.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import { customPass, type Pass, type PassContext } from '../../src/passes/pass.js';
import { IMAGE_FIXTURES, loadImageFixtures, type FixtureSample } from '../helpers/fixture-samples.js';
import { errorOf } from '../helpers/error-of.js';
import { makeTempDir, removeTree } from '../helpers/source-tree.js';

let fixtures: Map<string, FixtureSample>;
let tmp: string;
beforeAll(async () => {
  await configureSharpForPacking(imageConcurrency(2));
  fixtures = await loadImageFixtures();
  tmp = await makeTempDir('shardkit-passes-');
});
afterAll(async () => {
  await removeTree(tmp);
});

const spec = (text: string): Pass => parsePassSpec(text, { cwd: IMAGE_FIXTURES });

function fixture(key: string): FixtureSample {
  const f = fixtures.get(key);
  if (f === undefined) throw new Error(`no fixture ${key}`);
  return f;
}

async function run(pass: Pass, key: string, ctx?: PassContext): Promise<Sample> {
  const f = fixture(key);
  const out = await pass.run(f.sample, ctx ?? { paths: f.paths });
  if (out === 'skip') throw new Error('unexpected skip');
  return out;
}

function member(sample: Sample, ext: string): Uint8Array {
  const bytes = sample.members[ext];
  if (bytes === undefined) throw new Error(`sample ${sample.key} has no member ${ext} (has ${Object.keys(sample.members).join(', ')})`);
  return bytes;
}

const meta = (bytes: Uint8Array) => sharp(bytes).metadata();
const text = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes);

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
    // sharp makes a true 16-bit PNG from 16-bit samples tagged rgb16 / grey16
    const rgb = Uint16Array.from([65535, 32768, 0, 1000, 2000, 3000]);
    const png = await sharp(rgb, { raw: { width: 2, height: 1, channels: 3, depth: 'ushort' } }).toColourspace('rgb16').png().toBuffer();
    expect((await meta(png)).depth).toBe('ushort');
    const out = await spec('normalize=0,0,0:1,1,1').run({ key: 'k', members: { png } }, {});
    if (out === 'skip') throw new Error('skip');
    const t = decodeNpy(member(out, 'npy'));
    expect(t.shape).toEqual([3, 1, 2]);
    // planar: R of both pixels, then G, then B; 8-bit rounding would give 128/255 for 32768 and 4/255 for 1000
    expect(Array.from(t.data)).toEqual([65535, 1000, 32768, 2000, 0, 3000].map((v) => Math.fround(v / 65535)));
    const grey = Uint16Array.from([0, 20000, 40000, 60000]);
    const greyPng = await sharp(grey, { raw: { width: 4, height: 1, channels: 1, depth: 'ushort' } }).toColourspace('grey16').png().toBuffer();
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
    const rgb16 = await sharp(new Uint16Array(4 * 4 * 3).map((_, i) => [1000, 2000, 60000][i % 3] as number), { raw: { width: 4, height: 4, channels: 3, depth: 'ushort' } })
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

async function prepared(pass: Pass): Promise<Pass> {
  await pass.prepare?.(
    (async function* () {
      yield* fixtures.keys();
    })(),
  );
  return pass;
}

describe('tag=dirname', () => {
  it('indexes sorted parent directory names and writes classes.txt', async () => {
    const pass = await prepared(spec('tag=dirname'));
    expect(text(member(await run(pass, 'cat/001'), 'cls'))).toBe('1');
    expect(text(member(await run(pass, 'dog/004'), 'cls'))).toBe('2');
    expect(text(member(await run(pass, 'broken/006'), 'cls'))).toBe('0');
    const root = await run(pass, 'labels');
    expect(root).toBe(fixture('labels').sample);
    expect(pass.outputs?.()).toEqual({
      files: { 'classes.txt': new TextEncoder().encode('broken\ncat\ndog\n') },
      manifest: { classes: ['broken', 'cat', 'dog'] },
    });
    expect(pass.stats?.()).toEqual({ tagged: 3, untagged: 1, staleClsRemoved: 0 });
  });

  it('needs prepare() before run', async () => {
    const err = await errorOf(spec('tag=dirname').run(fixture('cat/001').sample, {}));
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG)).toBe(true);
  });
});

describe('tag=FILE', () => {
  it('labels.csv: class names by path, classes sorted, samples without a row untouched and counted', async () => {
    const pass = spec('tag=labels.csv');
    expect(pass.params).toMatchObject({ source: 'labels.csv', mode: 'cls', rows: 4 });
    expect(pass.params.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(text(member(await run(pass, 'cat/001'), 'cls'))).toBe('0');
    expect(text(member(await run(pass, 'dog/004'), 'cls'))).toBe('1');
    expect(await run(pass, 'dog/005')).toBe(fixture('dog/005').sample);
    expect(pass.stats?.()).toEqual({ tagged: 2, untagged: 1, staleClsRemoved: 0, unusedRows: 2 });
    expect(pass.outputs?.().manifest).toEqual({ classes: ['cat', 'dog'] });
  });

  it('label tables: a JSON object naming an id twice, a table without rows, CR line ends, a column named __proto__', () => {
    expect(() => parseJsonLabelTable('{"cat/001.jpg": "cat", "x": {"a": 1, "a": 2}, "cat/001.jpg": "dog"}', 'l.json')).toThrow('l.json: entry "cat/001.jpg" appears twice');
    expect(() => parseJsonLabelTable('{"a\\u002fb": 1, "a/b": 2}', 'l.json')).toThrow('l.json: entry "a/b" appears twice');
    expect(parseJsonLabelTable('{"x": {"a": 1, "a": 2}, "y": {"a": 3}}', 'l.json').rows.size).toBe(2); // names inside a row are the row's
    for (const [text, file] of [['{}', 'l.json'], ['[]', 'l.json'], ['path,label\n', 'l.csv']] as const) {
      const parse = file.endsWith('.csv') ? parseCsvLabelTable : parseJsonLabelTable;
      expect(() => parse(text, file), text).toThrow(`${file}: the table has no rows`);
    }
    const cr = parseCsvLabelTable('path,label\rcat/001.jpg,cat\rdog/003.webp,dog\r', 'l.csv');
    expect([cr.mode, [...(cr.classIndex ?? [])], cr.classes]).toEqual(['cls', [['cat/001.jpg', 0], ['dog/003.webp', 1]], ['cat', 'dog']]);
    // integer labels are indexes as they are, -1 too; any other label makes them all class names
    const ints = parseCsvLabelTable('path,label\na.jpg,2\nb.jpg,-1\nc.jpg,10\n', 'l.csv');
    expect([ints.mode, [...(ints.classIndex ?? [])], ints.classes]).toEqual(['cls', [['a.jpg', 2], ['b.jpg', -1], ['c.jpg', 10]], undefined]);
    const jsonInts = parseJsonLabelTable('{"a.jpg": 2, "b.jpg": -1}', 'l.json');
    expect([...(jsonInts.classIndex ?? [])]).toEqual([['a.jpg', 2], ['b.jpg', -1]]);
    const named = parseCsvLabelTable('path,label\na.jpg,2\nb.jpg,x\n', 'l.csv');
    expect([[...(named.classIndex ?? [])], named.classes]).toEqual([[['a.jpg', 0], ['b.jpg', 1]], ['2', 'x']]);
    const proto = parseCsvLabelTable('path,__proto__,x\na.jpg,cat,1\n', 'l.csv');
    expect(JSON.stringify(proto.rows.get('a.jpg'))).toBe('{"__proto__":"cat","x":"1"}');
  });

  it('matches a row by the key of its path when the sample has only renamed members (derive after format=webp)', async () => {
    const webp = await run(spec('format=webp'), 'cat/001');
    const tag = spec('tag=labels.csv');
    // derive knows only the members' current paths
    const out = await tag.run(webp, { paths: { webp: 'cat/001.webp', txt: 'cat/001.txt' } });
    if (out === 'skip') throw new Error('skip');
    expect(text(out.members.cls)).toBe('0');
    expect(tag.stats?.()).toMatchObject({ tagged: 1, untagged: 0 });
    // two rows of one key with two labels: the table is refused (issue 26); with one label, either row is the row
    await writeFile(join(tmp, 'twice.csv'), 'path,label\ncat/001.jpg,cat\ncat/001.png,dog\n');
    expect(() => parsePassSpec('tag=twice.csv', { cwd: tmp })).toThrow(/give sample "cat\/001" two different rows/);
    await writeFile(join(tmp, 'agree.csv'), 'path,label\ncat/001.jpg,cat\ncat/001.png,cat\ndog/001.png,dog\n');
    const agree = parsePassSpec('tag=agree.csv', { cwd: tmp });
    const tagged = await agree.run(webp, { paths: { webp: 'cat/001.webp' } });
    if (tagged === 'skip') throw new Error('skip');
    expect(text(tagged.members.cls)).toBe('0');
  });

  it('matches by source path after a format pass renamed the member', async () => {
    const webp = await run(spec('format=webp'), 'cat/001');
    const out = await spec('tag=labels.csv').run(webp, { paths: fixture('cat/001').paths });
    if (out === 'skip') throw new Error('skip');
    expect(text(out.members.cls)).toBe('0');
  });

  it('CSV with integer labels keeps them; several columns give a json member of strings', async () => {
    await writeFile(join(tmp, 'ints.csv'), 'key,cls\r\ncat/001,7\r\n./dog/003,12\r\n');
    const ints = parsePassSpec('tag=ints.csv', { cwd: tmp });
    expect(text(member(await run(ints, 'cat/001'), 'cls'))).toBe('7');
    expect(text(member(await run(ints, 'dog/003'), 'cls'))).toBe('12');
    expect(ints.outputs?.()).toEqual({});

    await writeFile(join(tmp, 'meta.csv'), 'path,caption,width\ncat/001.jpg,"a cat, small",64\n');
    const meta = parsePassSpec('tag=meta.csv', { cwd: tmp });
    expect(JSON.parse(text(member(await run(meta, 'cat/001'), 'json')))).toEqual({ caption: 'a cat, small', width: '64' });
  });

  it('JSON object and array forms', async () => {
    await writeFile(join(tmp, 'obj.json'), JSON.stringify({ 'cat/001': 'tabby', 'dog/003.webp': 'pug' }));
    const obj = parsePassSpec('tag=obj.json', { cwd: tmp });
    expect(obj.outputs?.().manifest).toEqual({ classes: ['pug', 'tabby'] });
    expect(text(member(await run(obj, 'cat/001'), 'cls'))).toBe('1');

    await writeFile(join(tmp, 'arr.json'), JSON.stringify([{ key: 'cat/001', bbox: [1, 2], ok: true }, { path: 'dog/003.webp', bbox: [3, 4] }]));
    const arr = parsePassSpec('tag=arr.json', { cwd: tmp });
    expect(JSON.parse(text(member(await run(arr, 'cat/001'), 'json')))).toEqual({ bbox: [1, 2], ok: true });
    expect(JSON.parse(text(member(await run(arr, 'dog/003'), 'json')))).toEqual({ bbox: [3, 4] });
  });

  it.each([
    ['dup.csv', 'path,label\na,1\n./a,2\n', /"a" appears twice/],
    ['short.csv', 'path,label\na\n', /data row 1 has 1 fields, expected 2/],
    ['empty.csv', '', /the table is empty/],
    ['quote.csv', 'path,label\n"a,1\n', /never closed/],
    ['nolabel.csv', 'path,label\na,\n', /empty or non-text label/],
    ['both.json', '[{"key":"a","path":"a.jpg"}]', /exactly one of "key" and "path"/],
    ['bad.json', '{', /not valid JSON/],
    ['null.json', '{"a": null}', /expected an object of fields/],
    ['labels.txt', 'x', /Expected dirname, FILE.csv or FILE.json/],
    ['missing.csv', undefined, /Cannot read label table missing.csv \(ENOENT\)/],
  ])('%s is rejected', async (name, content, message) => {
    if (content !== undefined) await writeFile(join(tmp, name), content);
    let error: unknown;
    try {
      parsePassSpec(`tag=${name}`, { cwd: tmp });
    } catch (e) {
      error = e;
    }
    expect(isShardkitError(error, ErrorCodes.INVALID_ARG)).toBe(true);
    expect((error as Error).message).toMatch(message);
  });
});

describe('parsePassSpec', () => {
  it('records deterministic params', () => {
    expect(spec('resize=224x224').params).toEqual({ width: 224, height: 224, fit: 'inside' });
    expect(spec('normalize').params).toEqual({ mode: 'contrast' });
    expect(spec('normalize=0.5:0.25').params).toEqual({ mode: 'tensor', mean: [0.5], std: [0.25], layout: 'CHW', dtype: 'float32' });
    expect(spec('tag=dirname').params).toEqual({ source: 'dirname' });
  });

  it('rejects unknown passes and missing values', () => {
    expect(() => spec('blur=3')).toThrow('Expected one of resize, normalize, format, tag for --pass but received "blur=3"');
    expect(() => spec('tag')).toThrow(/tag=dirname/);
    expect(() => spec('format')).toThrow(/format=jpeg/);
  });
});

describe('custom passes', () => {
  it('customPass checks results', async () => {
    const sample = fixture('cat/001').sample;
    const keyChanger = customPass('rename', (s) => ({ ...s, key: 'other' }));
    expect(await errorOf(keyChanger.run(sample, {}))).toSatisfy((e) => isShardkitError(e, ErrorCodes.INVALID_ARG) && /changed the key/.test((e as Error).message));
    const stringMember = customPass('str', (s) => ({ ...s, members: { txt: 'hi' as unknown as Uint8Array } }));
    expect(await errorOf(stringMember.run(sample, {}))).toSatisfy((e) => /members must be Uint8Array/.test((e as Error).message));
    const arrayMembers = customPass('arr', (s) => ({ key: s.key, members: Object.values(s.members) as unknown as Sample['members'] }));
    expect(await errorOf(arrayMembers.run(sample, {}))).toSatisfy((e) => isShardkitError(e, ErrorCodes.INVALID_ARG) && (e as Error).message === 'Pass arr returned the members of sample cat/001 as an array; expected an object of extension -> Uint8Array');
    expect(await customPass('skip', () => 'skip').run(sample, {})).toBe('skip');
    expect(() => customPass('p', (s) => s, { bad: 1n } as Record<string, unknown>)).toThrow(/JSON-serialisable/);
  });

  it('loads a module exporting a function, a pass object or an array', async () => {
    await writeFile(
      join(tmp, 'mark.mjs'),
      "export default async (sample, ctx) => sample.key.startsWith('broken') ? 'skip' : ({ ...sample, members: { ...sample.members, mark: new TextEncoder().encode(Object.keys(ctx.paths ?? {}).join(',')) } });\n",
    );
    const [mark] = await loadPassModule(join(tmp, 'mark.mjs'));
    expect(mark?.name).toBe('custom:mark.mjs');
    expect(mark?.params).toMatchObject({ module: 'mark.mjs' });
    expect(text(member(await run(mark as Pass, 'cat/001'), 'mark'))).toBe('jpg,txt');
    expect(await (mark as Pass).run(fixture('broken/006').sample, {})).toBe('skip');

    await writeFile(
      join(tmp, 'many.mjs'),
      [
        'let seen = 0;',
        "const counter = { name: 'count', params: { v: 1 }, async prepare(keys) { for await (const _ of keys) seen++; }, async run(s) { return s; }, outputs() { return { manifest: { seen } }; } };",
        'export default [counter, (s) => s];',
      ].join('\n'),
    );
    const passes = await loadPassModule(join(tmp, 'many.mjs'));
    expect(passes.map((p) => p.name)).toEqual(['count', 'custom:many.mjs#1']);
    await prepared(passes[0] as Pass);
    expect(passes[0]?.outputs?.()).toEqual({ manifest: { seen: fixtures.size } });
    expect(passes[0]?.params).toEqual({ v: 1 });
  });

  it("reports what a pass object's prepare() and outputs() throw or wrongly return naming the pass, not as shardkit's bug", async () => {
    await writeFile(
      join(tmp, 'hooks.mjs'),
      [
        "const prep = { name: 'prep', run: (s) => s, async prepare(keys) { for await (const k of keys) throw new Error('bad key list\\nmore'); } };",
        "const out = { name: 'out', run: (s) => s, outputs() { throw new TypeError('stats file missing'); } };",
        "const big = { name: 'big', run: (s) => s, outputs() { return { manifest: { count: 10n } }; } };",
        "const str = { name: 'str', run: (s) => s, outputs() { return { files: { 'notes.txt': 'text' } }; } };",
        'export default [prep, out, big, str];',
      ].join('\n'),
    );
    const [prep, out, big, str] = (await loadPassModule(join(tmp, 'hooks.mjs'))) as Pass[];
    const prepErr = await errorOf(prepared(prep as Pass));
    expect(isShardkitError(prepErr, ErrorCodes.INPUT) && prepErr.message).toBe('pass prep failed in prepare(): bad key list');
    const outErr = await errorOf(Promise.resolve().then(() => out?.outputs?.()));
    expect(isShardkitError(outErr, ErrorCodes.INPUT) && outErr.message).toBe('pass out failed in outputs(): TypeError: stats file missing');
    expect(() => big?.outputs?.()).toThrow('Expected a JSON-serialisable object for the manifest fields from outputs() of pass big');
    expect(() => str?.outputs?.()).toThrow('Pass str outputs() returned file "notes.txt" as a string; files must be Uint8Array (or Buffer)');
  });

  it.each([
    ['nodefault.mjs', 'export const x = 1;', /no default export/],
    ['number.mjs', 'export default 42;', /exports number; expected a function/],
    ['syntax.mjs', 'export default (', /Cannot load pass module/],
  ])('%s is rejected', async (name, source, message) => {
    await writeFile(join(tmp, name), source);
    const err = await errorOf(loadPassModule(join(tmp, name)));
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG)).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it('names a missing module', async () => {
    const err = await errorOf(loadPassModule(join(tmp, 'nope.mjs')));
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG) && (err as Error).message.includes('nope.mjs')).toBe(true);
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
