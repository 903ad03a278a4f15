import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasProof, lastUseMs, proofPath, removeCopy, touchCopy, writeProof } from '../../src/cache/copy-proof.js';
import { tmpDir } from '../helpers/tmp.js';

/** A copy's proof: trusted only while the file is the one that was checked (inode, size, mtime) and the CRC agrees. */
describe('copy proof', () => {
  const CRC = 0x1234abcd;
  /** A copy written an hour ago (file times are coarse, a few ms: a write now surely moves them). */
  function copy(): string {
    const file = path.join(tmpDir(), 'shard-000000.tar~1234abcd~4096');
    fs.writeFileSync(file, Buffer.alloc(4096, 7));
    const old = new Date(Date.now() - 3_600_000);
    fs.utimesSync(file, old, old);
    return file;
  }

  it('holds for the file it was written for, and for no other CRC32C', () => {
    const file = copy();
    expect(hasProof(file, CRC)).toBe(false); // no proof: a copy left by a process killed after its rename
    writeProof(file, CRC);
    expect(hasProof(file, CRC)).toBe(true);
    expect(hasProof(file, CRC ^ 1)).toBe(false);
    expect(fs.readdirSync(path.dirname(file)).sort()).toEqual([path.basename(file), path.basename(proofPath(file))]); // no temp left
  });

  it('fails once the file is written to, even with its size unchanged, or replaced by another file', () => {
    const file = copy();
    writeProof(file, CRC);
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.from([8]), 0, 1, 100);
    fs.closeSync(fd);
    expect(hasProof(file, CRC)).toBe(false);

    const other = copy();
    writeProof(other, CRC);
    const replacement = `${other}.new`;
    fs.writeFileSync(replacement, fs.readFileSync(other));
    fs.renameSync(replacement, other); // same name, size and bytes: another inode
    expect(hasProof(other, CRC)).toBe(false);
  });

  it('fails when the proof is torn or not a proof', () => {
    const file = copy();
    writeProof(file, CRC);
    const text = fs.readFileSync(proofPath(file), 'utf8');
    fs.writeFileSync(proofPath(file), text.slice(0, text.length >> 1));
    expect(hasProof(file, CRC)).toBe(false);
    fs.writeFileSync(proofPath(file), '{}');
    expect(hasProof(file, CRC)).toBe(false);
  });

  it('a use moves the last-use time, not the copy, so the proof still holds; removal takes both', async () => {
    const file = copy();
    writeProof(file, CRC);
    const older = new Date(Date.now() - 7_200_000); // before the copy was written
    fs.utimesSync(proofPath(file), older, older);
    const copyMtime = fs.statSync(file).mtimeMs;
    const mtime = fs.statSync(file, { bigint: true }).mtimeNs;
    expect(lastUseMs(file, copyMtime)).toBe(copyMtime); // the later of the two
    await touchCopy(file);
    expect(lastUseMs(file, copyMtime)).toBe(fs.statSync(proofPath(file)).mtimeMs);
    expect(lastUseMs(file, copyMtime)).toBeGreaterThan(copyMtime);
    expect(fs.statSync(file, { bigint: true }).mtimeNs).toBe(mtime);
    expect(hasProof(file, CRC)).toBe(true);
    removeCopy(file);
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
  });
});
