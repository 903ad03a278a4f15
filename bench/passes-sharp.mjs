#!/usr/bin/env node
/**
 * The standalone side of bench/passes.mjs: resizes every image listed in FILES (one path a line) to fit 224x224, as
 * `--pass resize=224x224` does (EXIF orientation applied, failOn 'error', same format out: JPEG quality 90, PNG
 * defaults), JOBS images at once, then writes the outputs to OUT in list order (pack writes its shards too).
 * MODE `defaults` leaves sharp's settings alone; `like-pack` sets what pack sets (one libvips thread per image,
 * no operation cache); `like-pack-metadata` also calls metadata() on each image first, as the pass does.
 *
 *   node bench/passes-sharp.mjs FILES OUT JOBS defaults|like-pack|like-pack-metadata
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';

const [filesList, outFile, jobsArg, mode] = process.argv.slice(2);
const sharp = createRequire(import.meta.url)('sharp');
if (mode.startsWith('like-pack')) {
  sharp.concurrency(1);
  sharp.cache(false);
}
const files = fs.readFileSync(filesList, 'utf8').split('\n').filter(Boolean);
const outputs = new Array(files.length);
let next = 0;
async function worker() {
  while (next < files.length) {
    const i = next++;
    const bytes = await fs.promises.readFile(files[i]);
    const image = sharp(bytes, { failOn: 'error', autoOrient: true }).resize({ width: 224, height: 224, fit: 'inside' });
    // like-pack-metadata: also reads the input's depth and colour space first, as the pass does to keep them
    if (mode === 'like-pack-metadata') await image.metadata();
    outputs[i] = await (/\.png$/i.test(files[i]) ? image.png() : image.jpeg({ quality: 90 })).toBuffer();
  }
}
await Promise.all(Array.from({ length: Number(jobsArg) }, worker));
const fd = fs.openSync(outFile, 'w');
for (const o of outputs) fs.writeSync(fd, o);
fs.closeSync(fd);
