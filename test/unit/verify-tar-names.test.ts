/**
 * verify in the tar layout checks each member's tar header against the index (its name and size), also on its fast
 * path, for samples of one stored member and of several (the walk's scan lists their names: leaf-scan.ts,
 * leaf-names.ts; tar-header-check.ts namedRun and membersNamed). A header rewritten with a valid checksum, so that
 * the tar still parses, names the sample; so does a flipped byte in any member.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { F_CHKSUM, F_NAME, F_SIZE, TAR_BLOCK, headerChecksum } from '../../formats/tar-header.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { ShardCheck } from '../../src/verify/shard-check.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 80;
/** In write order, as a pack of a sorted tree gives them: long runs of one shard, which verify takes on its fast path. */
const keyOf = (i: number): string => `train/c${Math.floor(i / 27)}/${String(i).padStart(4, '0')}`;
/** One stored member a sample (noise does not compress), 100-1,400 bytes: many samples to a 16 KiB shard. */
function sampleOf(i: number) {
  let x = i + 1;
  return { key: keyOf(i), members: { jpg: Uint8Array.from({ length: 100 + ((i * 37) % 1300) }, () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24) } };
}

interface Span {
  key: string;
  ext: string;
  shard: string;
  /** Where the member's data starts in its shard (its header is the block before). */
  start: number;
  size: number;
}

function copyDir(src: string): string {
  const dir = tmpDir();
  for (const f of fs.readdirSync(src)) fs.copyFileSync(path.join(src, f), path.join(dir, f));
  return dir;
}

/** Rewrites field [off, off + len) of the tar header before `span`'s data (`text` as UTF-8), then makes its checksum match again. */
function rewriteHeader(dir: string, span: Span, [off, len]: readonly [number, number], text: string): void {
  const file = path.join(dir, span.shard);
  const bytes = fs.readFileSync(file);
  const header = bytes.subarray(span.start - TAR_BLOCK, span.start);
  header.fill(0, off, off + len);
  header.write(text, off, 'utf8');
  header.write(`${headerChecksum(header).toString(8).padStart(6, '0')}\0 `, F_CHKSUM[0], 'latin1');
  fs.writeFileSync(file, bytes);
}

/** Sample i: one stored member, or with `cls`, a second one (its class, a few bytes), as `pack --pass tag` makes. */
function sampleWith(i: number, cls: boolean) {
  const { key, members } = sampleOf(i);
  return { key, members: cls ? { ...members, cls: new TextEncoder().encode(String(i % 7)) } : members };
}

async function packed(cls: boolean): Promise<{ dir: string; spans: Span[] }> {
  const dir = tmpDir();
  const w = new DatasetWriter({ dir, layout: 'tar', compress: 'none', shardBytes: 16 * 1024, pageSize: 1024 });
  for (let i = 0; i < N; i++) w.add(sampleWith(i, cls));
  await w.finish();
  const ds = await openDataset(dir);
  const spans: Span[] = [];
  for await (const e of ds.entries()) {
    expect(e.members.map((m) => m.ext)).toEqual(cls ? ['cls', 'jpg'] : ['jpg']);
    for (const m of e.members) spans.push({ key: e.key, ext: m.ext, shard: ds.shardName(e.shard), start: e.offset + m.offset, size: m.storedSize });
  }
  await ds.close();
  return { dir, spans };
}

describe('verify: tar headers of samples of one stored member', () => {
  let clean: string;
  let spans: Span[];
  beforeAll(async () => {
    ({ dir: clean, spans } = await packed(false));
  });
  const copy = (): string => copyDir(clean);

  it('passes the intact dataset', async () => {
    const r = await verifyDataset(clean);
    expect([r.ok, r.checked.samples, r.damaged]).toEqual([true, N, []]);
  });

  it('names the sample whose header names another file, and only it (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(N - 1), fc.constantFrom('other', 'ext', 'dot-slash'), async (i, how) => {
        const span = spans[i]!;
        const dir = copy();
        const renamed = how === 'other' ? `${keyOf((i + 1) % N)}.jpg` : how === 'ext' ? `${span.key}.png` : `./${span.key}.jpg`;
        rewriteHeader(dir, span, F_NAME, renamed);
        const r = await verifyDataset(dir);
        if (how === 'dot-slash') {
          // "./" before a name is what `tar -C dir -cf x.tar .` writes: the same member (only the shard's CRC32C changed)
          expect(r.damaged).toEqual([]);
        } else {
          expect(r.damaged.map((d) => [d.key, d.shard])).toEqual([[span.key, span.shard]]);
          expect(r.damaged[0]!.what).toBe(`member "jpg": tar header names ${JSON.stringify(renamed)}, the index says ${JSON.stringify(`${span.key}.jpg`)}`);
        }
        expect(r.ok).toBe(false); // the shard's whole-file CRC32C no longer matches either
        fs.rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 12 },
    );
  });

  it('names the sample whose header gives another size (one that keeps the tar parsing)', async () => {
    // size - 1 pads to the same blocks unless size is one past a block: the next header is where it was. Not the
    // first sample of its shard (verify reads a shard's first chunk on the way that names what is wrong)
    const span = spans.find((s, i) => i > 0 && spans[i - 1]!.shard === s.shard && s.size % TAR_BLOCK !== 1)!;
    const dir = copy();
    rewriteHeader(dir, span, F_SIZE, `${(span.size - 1).toString(8).padStart(11, '0')}`);
    const r = await verifyDataset(dir);
    expect(r.damaged.map((d) => [d.key, d.what])).toEqual([[span.key, `member "jpg": tar header says ${span.size - 1} bytes, the index says ${span.size}`]]);
  });
});

describe('verify: long names (a ustar prefix or a pax path header)', () => {
  it('passes intact samples whose names need more than the 100-byte name field, and names a renamed one', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, layout: 'tar', compress: 'none', shardBytes: 64 * 1024, pageSize: 1024 });
    // 120-byte paths (split over the prefix field), then 300-byte ones (a pax `path` record)
    const keyAt = (i: number): string => (i < 20 ? `${'d'.repeat(60)}/${'e'.repeat(50)}/${String(i).padStart(4, '0')}` : `${'f'.repeat(290)}/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < 40; i++) w.add({ key: keyAt(i), members: i % 2 === 0 ? sampleOf(i).members : sampleWith(i, true).members });
    await w.finish();
    const r = await verifyDataset(dir);
    expect([r.ok, r.checked.samples, r.damaged]).toEqual([true, 40, []]);
    // sample 4's name is split: its last part in the name field, the directories in the prefix field
    const ds = await openDataset(dir);
    const e = (await ds.locate(keyAt(4)))!;
    const span: Span = { key: e.key, ext: 'jpg', shard: ds.shardName(e.shard), start: e.offset, size: e.length };
    await ds.close();
    const bad = copyDir(dir);
    rewriteHeader(bad, span, F_NAME, '0004.png');
    const again = await verifyDataset(bad);
    expect(again.damaged.map((d) => [d.key, d.what])).toEqual([[span.key, `member "jpg": tar header names ${JSON.stringify(`${span.key}.png`)}, the index says ${JSON.stringify(`${span.key}.jpg`)}`]]);
  });
});

describe('verify: tar headers and bytes of samples of several stored members', () => {
  let clean: string;
  let spans: Span[];
  beforeAll(async () => {
    ({ dir: clean, spans } = await packed(true));
  });

  it('passes the intact dataset', async () => {
    const r = await verifyDataset(clean);
    expect([r.ok, r.checked.samples, r.checked.members, r.damaged]).toEqual([true, N, 2 * N, []]);
  });

  it('names the sample one of whose members is renamed, or has a byte flipped, and only it (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(spans.length - 1), fc.constantFrom('rename', 'flip'), fc.nat(), async (s, how, at) => {
        const span = spans[s]!;
        const dir = copyDir(clean);
        const want = `${span.key}.${span.ext}`;
        if (how === 'rename') rewriteHeader(dir, span, F_NAME, `${span.key}.bin`);
        else {
          const file = path.join(dir, span.shard);
          const bytes = fs.readFileSync(file);
          bytes[span.start + (at % span.size)]! ^= 0x20;
          fs.writeFileSync(file, bytes);
        }
        const r = await verifyDataset(dir);
        expect(r.damaged.map((d) => [d.key, d.shard])).toEqual([[span.key, span.shard]]);
        expect(r.damaged[0]!.what).toMatch(how === 'rename' ? `member "${span.ext}": tar header names ${JSON.stringify(`${span.key}.bin`)}, the index says ${JSON.stringify(want)}` : new RegExp(`^member "${span.ext}": checksum mismatch`));
        expect(r.ok).toBe(false);
        fs.rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 16 },
    );
  });
});

describe('verify: names past ASCII (file names in other scripts)', () => {
  /** The same samples as keyOf's, in folders and files named in other scripts (2-, 3- and 4-byte UTF-8). */
  const wideKeyOf = (i: number): string => `été/画像${Math.floor(i / 27)}/ñ${String(i).padStart(4, '0')}😀`;

  /** Samples of keyOf's sizes under `key`'s names; every third with a second member, named `ext`. */
  async function packWith(key: (i: number) => string, ext: string): Promise<{ dir: string; spans: Span[] }> {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, layout: 'tar', compress: 'none', shardBytes: 16 * 1024, pageSize: 1024 });
    for (let i = 0; i < N; i++) {
      const { jpg } = sampleOf(i).members;
      w.add({ key: key(i), members: i % 3 === 0 ? { jpg, [ext]: new TextEncoder().encode(String(i % 7)) } : { jpg } });
    }
    await w.finish();
    const ds = await openDataset(dir);
    const spans: Span[] = [];
    for await (const e of ds.entries()) for (const m of e.members) spans.push({ key: e.key, ext: m.ext, shard: ds.shardName(e.shard), start: e.offset + m.offset, size: m.storedSize });
    await ds.close();
    return { dir, spans };
  }

  /** verify's report, and how many samples it checked one by one (ShardCheck.sample: the general path). */
  async function verifyCounting(dir: string) {
    const spy = vi.spyOn(ShardCheck.prototype, 'sample');
    try {
      const r = await verifyDataset(dir);
      return { r, oneByOne: spy.mock.calls.length };
    } finally {
      spy.mockRestore();
    }
  }

  it('takes names and extensions past ASCII on the fast path as it takes ASCII ones, and names a renamed member in its own script', async () => {
    const ascii = await packWith(keyOf, 'cls');
    const wide = await packWith(wideKeyOf, 'clé'); // an extension past ASCII too
    const a = await verifyCounting(ascii.dir);
    const w = await verifyCounting(wide.dir);
    expect([w.r.ok, w.r.checked.samples, w.r.damaged]).toEqual([true, N, []]);
    // the same samples, shards and pages but for the names: as many left to the general path
    expect(w.oneByOne).toBe(a.oneByOne);
    expect(w.oneByOne).toBeLessThan(N / 4);

    const span = wide.spans.find((s, i) => i > 0 && s.ext === 'jpg' && wide.spans[i - 1]!.shard === s.shard)!;
    const renamed = `${span.key.replace('ñ', 'n')}.jpg`; // one character, another UTF-8 length
    rewriteHeader(wide.dir, span, F_NAME, renamed);
    const r = await verifyDataset(wide.dir);
    expect(r.damaged.map((d) => [d.key, d.what])).toEqual([[span.key, `member "jpg": tar header names ${JSON.stringify(renamed)}, the index says ${JSON.stringify(`${span.key}.jpg`)}`]]);
  });
});
