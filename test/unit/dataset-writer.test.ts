import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { reindexDataset } from '../../src/adopt/reindex.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { defined } from '../helpers/checked.js';
import { tmpDir } from '../helpers/tmp.js';

const enc = new TextEncoder();

function sample(i: number, size = 100): { key: string; members: Record<string, Uint8Array> } {
  const body = new Uint8Array(size).map((_, j) => (i * 31 + j) & 0xff);
  return { key: `k/${String(i).padStart(5, '0')}`, members: { bin: body, cls: enc.encode(String(i % 7)) } };
}

async function writeDataset(dir: string, n: number, opts: Partial<ConstructorParameters<typeof DatasetWriter>[0]> = {}) {
  const w = new DatasetWriter({ dir, shardBytes: 64 * 1024, ...opts });
  for (let i = 0; i < n; i++) w.add(sample(i, 100 + (i % 50) * 40));
  return w.finish();
}

describe('DatasetWriter', () => {
  for (const layout of ['tar', 'packed'] as const) {
    for (const compress of ['none', 'lz4'] as const) {
      it(`round-trips samples through ${layout}/${compress}`, async () => {
        const dir = tmpDir();
        const manifest = await writeDataset(dir, 500, { layout, compress });
        expect(manifest.totals.samples).toBe(500);
        expect(manifest.shards.length).toBeGreaterThan(1);
        for (const s of manifest.shards) expect(s.bytes).toBeLessThanOrEqual(64 * 1024);
        const ds = await openDataset(dir);
        expect(ds.size).toBe(500);
        for (const i of [0, 1, 250, 499]) {
          const want = sample(i, 100 + (i % 50) * 40);
          const got = await ds.get(want.key);
          expect(Buffer.from(got.members.bin!).equals(Buffer.from(defined(want.members.bin, 'the bin member of the sample written')))).toBe(true);
          expect(new TextDecoder().decode(got.members.cls)).toBe(String(i % 7));
          expect(ds.getSync(want.key).key).toBe(want.key);
          expect((await ds.at(i)).key).toBe(want.key);
          expect(ds.atSync(i).key).toBe(want.key);
        }
        const keys: string[] = [];
        for await (const k of ds.keys()) keys.push(k);
        expect(keys).toEqual(Array.from({ length: 500 }, (_, i) => sample(i).key));
        await expect(ds.get('nope')).rejects.toMatchObject({ code: ErrorCodes.KEY_NOT_FOUND });
        await ds.close();
      });
    }
  }

  it('writes byte-identical output for identical input', async () => {
    const a = tmpDir();
    const b = tmpDir();
    await writeDataset(a, 300);
    await writeDataset(b, 300);
    const names = fs.readdirSync(a).sort();
    expect(fs.readdirSync(b).sort()).toEqual(names);
    for (const n of names) expect(fs.readFileSync(path.join(a, n)).equals(fs.readFileSync(path.join(b, n)))).toBe(true);
  });

  it('sorts keys that arrive out of order, spilling runs', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 32 * 1024, runEntries: 17 });
    const order = Array.from({ length: 200 }, (_, i) => (i * 37) % 200);
    for (const i of order) w.add(sample(i));
    await w.finish();
    const ds = await openDataset(dir);
    const keys: string[] = [];
    for await (const k of ds.keys()) keys.push(k);
    expect(keys).toEqual([...keys].sort());
    expect(keys.length).toBe(200);
    for (const i of [0, 5, 199]) expect((await ds.get(sample(i).key)).members.bin!.length).toBe(100);
    await ds.close();
  });

  it('writes the same index live (keys in order) as from the runs, streamed or sorted, merged back', async () => {
    // keys in order stream into runs; out of order, with ascending streaks, they switch between streaming and sorting
    for (const order of [Array.from({ length: 400 }, (_, i) => i), Array.from({ length: 400 }, (_, i) => (i * 37) % 400)]) {
      const dirs = [tmpDir(), tmpDir()] as const;
      // the first builds its index as samples come (when they come in order); the second from dozens of runs
      for (const [dir, runEntries, liveIndex] of [[dirs[0], 1000, true], [dirs[1], 9, false]] as const) {
        const w = new DatasetWriter({ dir, shardBytes: 8 * 1024, runEntries, liveIndex });
        for (const i of order) w.add(sample(i));
        await w.finish();
      }
      const names = fs.readdirSync(dirs[0] as string).sort();
      expect(fs.readdirSync(dirs[1] as string).sort()).toEqual(names);
      for (const n of names) expect(fs.readFileSync(path.join(dirs[0] as string, n)).equals(fs.readFileSync(path.join(dirs[1] as string, n))), n).toBe(true);
    }
  });

  it('merges hundreds of runs in bounded groups (fan-in) and still sorts every key', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 16 * 1024, runEntries: 7 });
    const order = Array.from({ length: 1500 }, (_, i) => (i * 733) % 1500);
    for (const i of order) w.add(sample(i, 20));
    await w.finish();
    const ds = await openDataset(dir);
    const keys: string[] = [];
    for await (const k of ds.keys()) keys.push(k);
    expect(keys).toEqual(Array.from({ length: 1500 }, (_, i) => sample(i).key));
    await ds.close();
    expect(fs.existsSync(path.join(dir, '.shardkit-work'))).toBe(false);
  });

  it('refuses keys and member extensions that UTF-8 cannot hold (lone surrogates), before writing them', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir });
    for (const bad of [{ key: 'k\ud800', ext: 'bin' }, { key: 'k', ext: 'x\ud800' }, { key: 'k', ext: '\udc00y' }]) {
      expect(() => w.add({ key: bad.key, members: { [bad.ext]: enc.encode('x') } }), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH }));
    }
    w.add({ key: 'k', members: { 'x\ud83d\ude00': enc.encode('ok') } });
    await w.finish();
    const ds = await openDataset(dir);
    expect(Object.keys((await ds.get('k')).members)).toEqual(['x\ud83d\ude00']);
    await ds.close();
  });


  it('refuses a sample that is not { key: string, members: { ext: Uint8Array } } before changing anything, naming key and member, and goes on', async () => {
    const bad: [unknown, RegExp][] = [
      [{ key: 'b', members: { cls: enc.encode('1'), txt: 'not bytes' } }, /^Expected a Uint8Array for member "txt" of sample "b" but received "not bytes" of type string$/],
      [{ key: 'b', members: { txt: 42 } }, /member "txt" of sample "b" but received 42 of type number/],
      [{ key: 'b', members: { txt: [1, 2] } }, /member "txt" of sample "b" but received \[object Array\] of type object/],
      [{ key: 'b', members: { txt: null } }, /member "txt" of sample "b" but received null of type object/],
      [{ key: 'b', members: { txt: { length: 1, subarray: () => enc.encode('x') } } }, /member "txt" of sample "b" but received \[object Object\]/],
      [{ key: 'b', members: { txt: new Uint16Array(2) } }, /member "txt" of sample "b" but received \[object Uint16Array\]/],
      [{ key: 'b', members: { txt: enc.encode('x').buffer } }, /member "txt" of sample "b" but received \[object ArrayBuffer\]/],
      [{ key: 'b', members: [enc.encode('x')] }, /^Expected an object of Uint8Array members for sample "b" but received \[object Array\] of type object$/],
      [{ key: 'b', members: new Map([['txt', enc.encode('x')]]) }, /members for sample "b" but received \[object Map\]/],
      [{ key: 'b' }, /members for sample "b" but received undefined of type undefined/],
      [{ key: 7, members: { txt: enc.encode('x') } }, /^Expected a string for sample key but received 7 of type number$/],
      [null, /^Expected an object \{ key, members \} for sample but received null of type object$/],
      ['b.txt', /^Expected an object \{ key, members \} for sample but received "b.txt" of type string$/],
    ];
    for (const layout of ['tar', 'packed'] as const) {
      for (const compress of ['none', 'lz4'] as const) {
        const dir = tmpDir();
        const clean = tmpDir();
        const w = new DatasetWriter({ dir, layout, compress, shardBytes: 4096 });
        const good = new DatasetWriter({ dir: clean, layout, compress, shardBytes: 4096 });
        for (const writer of [w, good]) writer.add({ key: 'a', members: { txt: enc.encode('hello') } });
        for (const [s, message] of bad) {
          let caught: unknown;
          try {
            w.add(s as never);
          } catch (err) {
            caught = err;
          }
          expect(caught, JSON.stringify(s)).toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(message) });
        }
        for (const writer of [w, good]) writer.add({ key: 'c', members: { txt: Buffer.from('a Buffer is a Uint8Array') } });
        expect(w.stats).toEqual(good.stats);
        await w.finish();
        await good.finish();
        // the same bytes as a writer that never saw the refused samples
        const names = fs.readdirSync(clean).filter((n) => n !== 'pack-report.json').sort();
        expect(fs.readdirSync(dir).sort()).toEqual(names);
        for (const n of names) expect(fs.readFileSync(path.join(dir, n)).equals(fs.readFileSync(path.join(clean, n))), n).toBe(true);
        const ds = await openDataset(dir);
        const keys: string[] = [];
        for await (const k of ds.keys()) keys.push(k);
        expect(keys).toEqual(['a', 'c']);
        await ds.close();
      }
    }
  });
  it('in the tar layout refuses a key with a dot after its last "/" (its member names would read back as another key); the packed layout takes it', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 64 * 1024 });
    w.add({ key: 'a', members: { 'b.c': enc.encode('1') } });
    for (const key of ['a.b', 'm.', 'x/y.z', '.h', 'd/.h', 'd./e.f']) {
      expect(() => w.add({ key, members: { c: enc.encode('2') } }), key).toThrow(
        expect.objectContaining({ code: ErrorCodes.INVALID_ARG, key, message: expect.stringMatching(/^sample key ".*" has a "\." after its last "\/": the tar layout names members key\.ext/) }),
      );
    }
    w.add({ key: 'd./e', members: { '': enc.encode('3'), '.x': enc.encode('4') } });
    await w.finish();
    const before = fs.readFileSync(path.join(dir, INDEX_FILE));
    // reindex splits the tar names back into the same keys and members, to the same index
    fs.rmSync(path.join(dir, INDEX_FILE));
    await reindexDataset(dir);
    expect(fs.readFileSync(path.join(dir, INDEX_FILE)).equals(before)).toBe(true);
    const ds = await openDataset(dir);
    const got: [string, string[]][] = [];
    for await (const e of ds.entries()) got.push([e.key, e.members.map((m) => m.ext)]);
    expect(got).toEqual([['a', ['b.c']], ['d./e', ['', '.x']]]);
    await ds.close();

    const packed = tmpDir();
    const p = new DatasetWriter({ dir: packed, layout: 'packed' });
    for (const [key, ext] of [['a', 'b.c'], ['a.b', 'c'], ['m.', 'x']] as const) p.add({ key, members: { [ext]: enc.encode(`${key}|${ext}`) } });
    await p.finish();
    const pds = await openDataset(packed);
    for (const [key, ext] of [['a', 'b.c'], ['a.b', 'c'], ['m.', 'x']] as const) expect(new TextDecoder().decode((await pds.get(key)).members[ext])).toBe(`${key}|${ext}`);
    await pds.close();
  });

  it('refuses duplicate keys', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir });
    w.add(sample(1));
    w.add(sample(1));
    await expect(w.finish()).rejects.toMatchObject({ code: ErrorCodes.DUPLICATE_KEY });
    expect(fs.existsSync(path.join(dir, 'manifest.json'))).toBe(false);
  });

  it('gives a sample larger than the budget a shard of its own', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 4096 });
    w.add(sample(0, 100));
    w.add(sample(1, 10_000));
    w.add(sample(2, 100));
    const m = await w.finish();
    expect(m.shards.map((s) => s.samples)).toEqual([1, 1, 1]);
    expect(w.stats.oversizeSamples).toBe(1);
  });

  it('refuses to overwrite a finished dataset without force', async () => {
    const dir = tmpDir();
    await writeDataset(dir, 10);
    expect(() => new DatasetWriter({ dir })).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS }));
    const m = await writeDataset(dir, 5, { force: true });
    expect(m.totals.samples).toBe(5);
  });

  it('resumes the live index from its checkpoints: killed again and again, sent back a shard, dropped on the way', async () => {
    const opts = { shardBytes: 16 * 1024, pageSize: 1024 };
    const size = (i: number) => 100 + (i % 50) * 40;
    // in key order (the index is built live throughout), and with two keys swapped at 500 (it drops to runs there)
    const inOrder = Array.from({ length: 1500 }, (_, i) => i);
    const swapped = inOrder.map((i) => (i === 500 ? 501 : i === 501 ? 500 : i));
    for (const order of [inOrder, swapped]) {
      const full = tmpDir();
      const w = new DatasetWriter({ dir: full, ...opts });
      for (const i of order) w.add(sample(i, size(i)));
      await w.finish();
      const dir = tmpDir();
      let cursor = 0;
      for (const [killAt, damageLast] of [[300, false], [700, true], [1100, false]] as const) {
        const r = new DatasetWriter({ dir, ...opts, resume: cursor > 0 });
        expect(r.resumedCursor).toBe(cursor);
        for (let c = cursor; c < killAt; c++) r.add(sample(order[c]!, size(order[c]!)));
        r.abort();
        const journal = fs.readFileSync(path.join(dir, '.shardkit-work', 'journal.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
        const shards = journal.filter((l) => l.type === 'shard');
        // the lines carry the live index's checkpoint until it dropped, run counts after
        for (const l of shards) expect(l.index === undefined, `cursor ${l.cursor}`).toBe(order === swapped && l.cursor > 500);
        if (damageLast) fs.truncateSync(path.join(dir, shards.at(-1).shard.file), 10);
        cursor = damageLast ? shards.at(-2).cursor : shards.at(-1).cursor;
      }
      const r = new DatasetWriter({ dir, ...opts, resume: true });
      expect(r.resumedCursor).toBe(cursor);
      for (let c = cursor; c < order.length; c++) r.add(sample(order[c]!, size(order[c]!)));
      await r.finish();
      const names = fs.readdirSync(full).sort();
      expect(fs.readdirSync(dir).sort()).toEqual(names);
      for (const n of names) expect(fs.readFileSync(path.join(dir, n)).equals(fs.readFileSync(path.join(full, n))), n).toBe(true);
    }
  });

  it('a resumed write that ends sooner than the killed one (the source shrank) keeps none of its later index pages', async () => {
    const opts = { shardBytes: 1 << 20, pageSize: 1024 };
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, ...opts });
    for (let i = 0; i < 1500; i++) w.add(sample(i));
    w.abort(); // pages of the samples after the last finished shard were written to the live index
    const r = new DatasetWriter({ dir, ...opts, resume: true });
    expect(r.resumedCursor).toBeGreaterThan(0);
    expect(r.resumedCursor).toBeLessThan(1350);
    await r.finish();
    const full = tmpDir();
    const f = new DatasetWriter({ dir: full, ...opts });
    for (let i = 0; i < r.resumedCursor; i++) f.add(sample(i));
    await f.finish();
    expect(fs.readFileSync(path.join(dir, 'index.skidx')).equals(fs.readFileSync(path.join(full, 'index.skidx')))).toBe(true);
  });

  it('refuses a sample whose index record fits no page before writing any of its bytes, and goes on', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, pageSize: 1024 });
    w.add(sample(1));
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`m${i}`, enc.encode('x')]));
    expect(() => w.add({ key: 'k/00002', members: many })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.TOO_LARGE,
        // names the option as the command line and the library spell it
        message: expect.stringMatching(/^sample "k\/00002" with 200 members needs \d+ index bytes; 1024-byte pages hold \d+ \(use larger pages: `--page-size` on the command line, `pageSize` in the library\)$/),
      }),
    );
    w.add(sample(3));
    await w.finish();
    const ds = await openDataset(dir);
    expect(ds.size).toBe(2);
    expect(ds.manifest.shards[0]!.bytes).toBe(fs.statSync(path.join(dir, ds.manifest.shards[0]!.file)).size);
    const got = await ds.get('k/00003');
    expect(Buffer.from(got!.members.bin!).equals(Buffer.from(sample(3).members.bin!))).toBe(true);
    await ds.close();
  });

  it('resumes a write killed between the index rename and the manifest rename to the same bytes', async () => {
    const opts = { shardBytes: 16 * 1024, pageSize: 1024 };
    const size = (i: number) => 100 + (i % 50) * 40;
    // in key order (the live index was renamed into place), and with two keys swapped (the index came from runs)
    const inOrder = Array.from({ length: 600 }, (_, i) => i);
    const swapped = inOrder.map((i) => (i === 300 ? 301 : i === 301 ? 300 : i));
    for (const order of [inOrder, swapped]) {
      const write = async (dir: string): Promise<void> => {
        const w = new DatasetWriter({ dir, ...opts });
        for (const i of order) w.add(sample(i, size(i)));
        w.addFile('classes.txt', enc.encode('a\nb\n'));
        await w.finish();
      };
      const full = tmpDir();
      await write(full);
      const dir = tmpDir();
      const rename = fs.renameSync;
      const spy = vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
        if (String(to).endsWith('manifest.json')) throw Object.assign(new Error('killed'), { code: 'EIO' });
        rename(from, to);
      });
      try {
        await expect(write(dir)).rejects.toThrow(/killed/);
      } finally {
        spy.mockRestore();
      }
      expect(fs.existsSync(path.join(dir, 'index.skidx'))).toBe(true);
      expect(fs.existsSync(path.join(dir, 'manifest.json'))).toBe(false);
      const r = new DatasetWriter({ dir, ...opts, resume: true });
      expect(r.resumedCursor).toBe(order.length);
      r.addFile('classes.txt', enc.encode('a\nb\n'));
      await r.finish();
      const names = fs.readdirSync(full).sort();
      expect(fs.readdirSync(dir).sort()).toEqual(names);
      for (const n of names) expect(fs.readFileSync(path.join(dir, n)).equals(fs.readFileSync(path.join(full, n))), n).toBe(true);
    }
  });

  it('refuses extra files named like its own shards, index, manifest, pack report or temporary files', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 4096 });
    for (let i = 0; i < 20; i++) w.add(sample(i, 300));
    for (const name of ['shard-000000.tar', 'shard-000001.tar', 'shard-000000.pack', 'p0of2-000003.tar', 'pack-report.json', 'manifest.json', 'index.skidx', 'notes.tmp']) {
      expect(() => w.addFile(name, enc.encode('mine\n'), 'pass notes'), name).toThrow(/^cannot add dataset file .* \(from pass notes\): the dataset uses that name/);
    }
    w.addFile('shard-notes.tar', enc.encode('fine\n'));
    const m = await w.finish();
    expect(m.files).toEqual(['shard-notes.tar', 'shardindex.json']);
    expect(m.shards.length).toBeGreaterThan(1);
    for (const s of m.shards) expect(fs.statSync(path.join(dir, s.file)).size).toBe(s.bytes);
  });

  it('a damaged journal is named as such when opened, and --force starts over from it', async () => {
    const damaged = 'an interrupted write left a damaged journal in .shardkit-work/: start over with `--force`';
    for (const journal of ['not a journal\n', '{"type":"begin","options":{}}\n{"type":"shard"}\n']) {
      const dir = tmpDir();
      fs.mkdirSync(path.join(dir, '.shardkit-work'));
      fs.writeFileSync(path.join(dir, '.shardkit-work', 'journal.jsonl'), journal);
      await expect(openDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.NOT_A_DATASET, message: expect.stringContaining(damaged) });
      await expect(openDataset(pathToFileURL(dir).href)).rejects.toMatchObject({ message: expect.stringContaining(damaged) });
      const w = new DatasetWriter({ dir, force: true });
      w.add(sample(0, 10));
      expect((await w.finish()).totals.samples).toBe(1);
    }
  });

  it('an interrupted derive is named as one, with its own --resume', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 4096, sourceDigest: 'source-index-digest' });
    for (let i = 0; i < 6; i++) w.add(sample(i, 3000));
    w.abort();
    await expect(openDataset(dir)).rejects.toMatchObject({
      message: expect.stringContaining(`an interrupted derive left 5 samples in 5 finished shards: finish it with \`shardkit derive <dataset> --out ${dir} --resume\``),
    });
  });

  it('resumes after the last finished shard with byte-identical output', async () => {
    const full = tmpDir();
    await writeDataset(full, 400);
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 64 * 1024 });
    for (let i = 0; i < 250; i++) w.add(sample(i, 100 + (i % 50) * 40));
    w.abort(); // as if killed: finished shards and the journal stay, no manifest
    expect(fs.existsSync(path.join(dir, 'manifest.json'))).toBe(false);
    // the error says how far the pack got, from its journal: the samples of its finished shards
    const finished = fs.readdirSync(dir).filter((n) => n.endsWith('.tar'));
    expect(finished.length).toBeGreaterThan(1);
    await expect(openDataset(dir)).rejects.toMatchObject({
      code: ErrorCodes.NOT_A_DATASET,
      message: expect.stringMatching(new RegExp(`an interrupted pack left (\\d+) samples in ${finished.length} finished shards: finish it with \`shardkit pack <src> --out ${dir} --resume\``)),
    });
    expect(() => new DatasetWriter({ dir, shardBytes: 64 * 1024 })).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS }));
    const r = new DatasetWriter({ dir, shardBytes: 64 * 1024, resume: true });
    await expect(openDataset(dir)).rejects.toMatchObject({ message: expect.stringContaining(`left ${r.resumedCursor} samples in ${finished.length} finished shards`) });
    expect(r.resumedCursor).toBeGreaterThan(0);
    expect(r.resumedCursor).toBeLessThan(250);
    for (let i = r.resumedCursor; i < 400; i++) r.add(sample(i, 100 + (i % 50) * 40));
    await r.finish();
    const names = fs.readdirSync(full).sort();
    expect(fs.readdirSync(dir).sort()).toEqual(names);
    for (const n of names) expect(fs.readFileSync(path.join(dir, n)).equals(fs.readFileSync(path.join(full, n))), n).toBe(true);
  });
});
