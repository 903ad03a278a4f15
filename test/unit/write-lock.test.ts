/** src/pack/write-lock.ts: one writer per output directory; stale locks of dead writers are taken over. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { adoptTars } from '../../src/adopt/adopt-tars.js';
import { reindexDataset } from '../../src/adopt/reindex.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { mergeParts } from '../../src/pack/merge.js';
import { LOCK_FILE, WriteLock } from '../../src/pack/write-lock.js';
import { tmpDir } from '../helpers/tmp.js';

const owner = (pid: number, host = os.hostname(), extra: Record<string, unknown> = {}): string => `${JSON.stringify({ pid, host, command: 'pack', started: '2026-01-01T00:00:00.000Z', ...extra })}\n`;

describe('WriteLock', () => {
  it("claims its directory only once the directory checks passed, and an index's lock never", async () => {
    const claimOf = (dir: string): unknown => (JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8')) as { claimed?: number }).claimed;
    const bare = tmpDir();
    const lock = WriteLock.acquire(bare, 'index');
    expect(claimOf(bare)).toBe(0);
    lock.release();
    const dir = tmpDir();
    const w = new DatasetWriter({ dir });
    expect(claimOf(dir)).toBe(1);
    await w.finish();
  });

  it('is held by one writer at a time, and free again once released', () => {
    const dir = tmpDir();
    const lock = WriteLock.acquire(dir, 'pack');
    expect(JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid, host: os.hostname(), command: 'pack' });
    expect(() => WriteLock.acquire(dir, 'merge')).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringMatching(new RegExp(`is being written by another shardkit pack \\(pid ${process.pid} on `)) }));
    lock.release();
    lock.release();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    WriteLock.acquire(dir, 'merge').release();
  });

  it('takes over the lock of a writer that died, or never wrote it; refuses one of another host', () => {
    const dir = tmpDir();
    const file = path.join(dir, LOCK_FILE);
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    fs.writeFileSync(file, owner(Number(dead.stdout)));
    WriteLock.acquire(dir, 'pack').release();
    // an empty lock: its writer was killed between create and write (old), or is writing it now (young)
    fs.writeFileSync(file, '');
    expect(() => WriteLock.acquire(dir, 'pack')).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS }));
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(file, old, old);
    WriteLock.acquire(dir, 'pack').release();
    // another host: whether its writer lives cannot be known here
    fs.writeFileSync(file, owner(Number(dead.stdout), `not-${os.hostname()}`));
    expect(() => WriteLock.acquire(dir, 'pack')).toThrow(expect.objectContaining({ message: expect.stringContaining(`delete ${file} if that process is gone`) }));
  });

  it('a writer that fails to open after taking the lock lets go of it, as a killed one: the same process can try again', async () => {
    const dir = tmpDir();
    const first = new DatasetWriter({ dir, shardBytes: 4096 });
    for (let i = 0; i < 8; i++) first.add({ key: `k${i}`, members: { bin: new Uint8Array(3000) } });
    first.abort();
    // a resume that fails after its directory checks: a directory where it removes stale run files
    const blocker = path.join(dir, '.shardkit-work', 'run-999999.bin');
    fs.mkdirSync(blocker);
    expect(() => new DatasetWriter({ dir, resume: true, shardBytes: 4096 })).toThrow(expect.objectContaining({ message: expect.stringContaining("run-999999.bin") }));
    fs.rmdirSync(blocker);
    const again = new DatasetWriter({ dir, resume: true, shardBytes: 4096 });
    again.add({ key: 'k8', members: { bin: new Uint8Array(3000) } });
    expect((await again.finish()).totals.samples).toBe(8); // k0-k6 in finished shards (k7's was open at the abort), and k8
    expect(fs.readdirSync(dir)).not.toContain(LOCK_FILE);
  });

  it('keeps a second writer out of a directory being written: pack, derive, merge, index and reindex take it', async () => {
    const enc = new TextEncoder();
    const dir = tmpDir();
    const first = new DatasetWriter({ dir });
    first.add({ key: 'a', members: { txt: enc.encode('a') } });
    expect(() => new DatasetWriter({ dir, force: true })).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringContaining('is being written by another shardkit pack') }));
    await first.finish();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    const aborted = new DatasetWriter({ dir: tmpDir() });
    aborted.abort();
    new DatasetWriter({ dir: (aborted as unknown as { dir: string }).dir, resume: true }).abort();

    const held = WriteLock.acquire(dir, 'test');
    const busy = { code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringContaining('is being written by another shardkit test') };
    await expect(reindexDataset(dir)).rejects.toMatchObject(busy);
    const out = tmpDir();
    const outLock = WriteLock.acquire(out, 'test');
    await expect(mergeParts([dir], out)).rejects.toMatchObject(busy);
    const tar = path.join(tmpDir(), 'a.tar');
    spawnSync('tar', ['-cf', tar, '-C', dir, 'shard-000000.tar']);
    await expect(adoptTars([tar], { out })).rejects.toMatchObject(busy);
    outLock.release();
    held.release();
    expect((await reindexDataset(dir)).manifest.totals.samples).toBe(1);
    expect(fs.readdirSync(dir)).not.toContain(LOCK_FILE);
  });

  it('--force clears what a killed --force left (its lock, no manifest, no journal); without it, says so', () => {
    const dir = tmpDir();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    // a --force killed after it removed the manifest, before the rest of the old dataset: it had claimed the directory
    fs.writeFileSync(path.join(dir, LOCK_FILE), owner(Number(dead.stdout), os.hostname(), { claimed: 1 }));
    fs.writeFileSync(path.join(dir, 'shard-000003.tar'), 'old shard');
    fs.writeFileSync(path.join(dir, 'pack-report.json'), '{}');
    fs.writeFileSync(path.join(dir, 'notes.txt'), "the user's");
    expect(() => new DatasetWriter({ dir })).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringContaining('holds what a killed shardkit write left') }));
    new DatasetWriter({ dir, force: true }).abort();
    expect(fs.readdirSync(dir).sort()).toEqual(['.shardkit-work', 'notes.txt']);
    // and in a directory no shardkit wrote (no dead writer's lock), nothing is touched, --force or not
    const user = tmpDir();
    fs.writeFileSync(path.join(user, 'shard-000003.tar'), 'theirs');
    expect(() => new DatasetWriter({ dir: user, force: true })).toThrow(expect.objectContaining({ message: expect.stringContaining('is not empty and holds no shardkit dataset') }));
    expect(fs.readdirSync(user)).toEqual(['shard-000003.tar']);
    // nor where the dead writer had not claimed the directory: an `index` or `reindex` (they work among the user's own
    // tars: an `index` run in place and stopped with Ctrl-C left its lock next to them, claimed or not), a pack killed
    // while it checked the directory, or a lock of an earlier version
    for (const lock of [{ command: 'index', claimed: 0 }, { command: 'reindex' }, { command: 'pack', claimed: 0 }, { command: 'pack' }]) {
      const tars = tmpDir();
      fs.writeFileSync(path.join(tars, 'clip-000000.tar'), 'theirs');
      fs.writeFileSync(path.join(tars, LOCK_FILE), owner(Number(dead.stdout), os.hostname(), lock));
      expect(() => new DatasetWriter({ dir: tars, force: true })).toThrow(expect.objectContaining({ message: expect.stringContaining('is not empty and holds no shardkit dataset') }));
      expect(fs.readdirSync(tars).sort()).toEqual(['clip-000000.tar']);
    }
  });

  it('clears the work directory a write killed after its commit left next to the finished dataset', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir });
    w.add({ key: 'a', members: { txt: new TextEncoder().encode('a') } });
    await w.finish();
    fs.mkdirSync(path.join(dir, '.shardkit-work'));
    fs.writeFileSync(path.join(dir, '.shardkit-work', 'journal.jsonl'), '');
    expect(() => new DatasetWriter({ dir })).toThrow(expect.objectContaining({ message: expect.stringContaining('already holds a finished dataset') }));
    expect(fs.existsSync(path.join(dir, '.shardkit-work'))).toBe(false);
  });

  it('--force killed after it moved the old manifest aside: the next --force still knows and clears its files', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir });
    w.add({ key: 'a', members: { txt: new TextEncoder().encode('a') } });
    w.addFile('classes.txt', new TextEncoder().encode('cat\n'));
    await w.finish();
    fs.writeFileSync(path.join(dir, 'notes.txt'), "the user's");
    // what a --force killed right after moving the manifest aside leaves
    fs.renameSync(path.join(dir, 'manifest.json'), path.join(dir, '.shardkit-replaced-manifest.json'));
    expect(() => new DatasetWriter({ dir })).toThrow(expect.objectContaining({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringContaining('holds part of a dataset a killed --force was replacing') }));
    new DatasetWriter({ dir, force: true }).abort();
    expect(fs.readdirSync(dir).sort()).toEqual(['.shardkit-work', 'notes.txt']);
  });
});
