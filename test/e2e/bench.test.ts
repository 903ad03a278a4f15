/** The built CLI's bench on a small synthesized dataset: three report files, exit 0, figures that match the data. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

describe('shardkit bench', () => {
  it('benches raw files vs shards and writes report.md, report.json and report.html', () => {
    const root = tmpDir('shardkit-bench-e2e-');
    const raw = path.join(root, 'raw');
    const ds = path.join(root, 'ds');
    const out = path.join(root, 'report');
    expect(shardkit(['synth', raw, '--samples', '40', '--classes', '4', '--sizes', 'tiny', '--quiet']).status).toBe(0);
    fs.writeFileSync(path.join(raw, 'LICENSE'), 'a file without an extension: member "" of sample LICENSE\n');
    const packed = shardkit(['pack', raw, '--out', ds, '--shard', '8KiB', '--quiet']);
    expect(packed.status, packed.stderr).toBe(0);
    const r = shardkit(['bench', raw, ds, '--epochs', '1', '--repeat', '1', '--no-strace', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    for (const f of ['report.md', 'report.json', 'report.html']) expect(fs.statSync(path.join(out, f)).size).toBeGreaterThan(0);
    expect(r.stdout).toContain(path.join(out, 'report.html'));

    const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8'));
    const manifest = JSON.parse(fs.readFileSync(path.join(ds, 'manifest.json'), 'utf8'));
    const rawFiles = fs.readdirSync(raw, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
    expect(report.dataset.samples).toBe(manifest.totals.samples);
    expect(report.dataset.shards).toBe(manifest.shards.length);
    expect(report.dataset.rawFiles).toBe(rawFiles);
    expect(report.dataset.packSeconds).toBeGreaterThan(0);
    for (const side of [report.sides.raw, report.sides.shards]) {
      expect(side.epochSeconds).toHaveLength(1);
      expect(side.medianSeconds).toBeGreaterThan(0);
      expect(side.samplesPerSecond).toBeGreaterThan(0);
      expect(side.counters[0].samples).toBe(manifest.totals.samples);
      expect(side.peakRssBytes).toBeGreaterThan(0);
    }
    // the raw side reads into the heap; the shards side's RSS counts the shard pages it mapped (with the addon)
    expect(report.sides.raw.mappedDataBytes).toBe(0);
    const shards = report.sides.shards;
    if (shards.counters[0].mappedReads > 0) expect(shards.mappedDataBytes).toBeGreaterThan(0);
    else expect(shards.mappedDataBytes).toBe(0);
    expect(shards.mappedDataBytes).toBeLessThanOrEqual(shards.peakRssBytes);
    expect(fs.readFileSync(path.join(out, 'report.md'), 'utf8')).toContain(shards.mappedDataBytes > 0 ? 'of it mapped data files' : 'peak RSS');
    expect(r.stdout).toContain('peak RSS (mapped data)');
    expect(report.sides.raw.counters[0].opens).toBe(rawFiles);
    expect(report.sides.shards.counters[0].opens).toBe(manifest.shards.length);
    expect(report.command.slice(1, 2)).toEqual(['bench']);
    expect(fs.readFileSync(path.join(out, 'report.md'), 'utf8')).toContain(String(manifest.totals.samples));
  });

  it('rejects a bad option with exit 2 and a one-line error', () => {
    const r = shardkit(['bench', tmpDir(), tmpDir(), '--epochs', '0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: .*--epochs/);
  });

  it('refuses a remote dataset at once, with exit 2, naming it without its credentials', () => {
    const r = shardkit(['bench', tmpDir(), 'https://user:secret@127.0.0.1:9/ds?sig=token', '--epochs', '1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: bench's <dataset> must be a local path, not the URL https:\/\/127\.0\.0\.1:9\/ds\?\.\.\.: pass a local copy as <dataset> and the URL as --remote\n/);
    expect(r.stderr).not.toMatch(/secret|token/);
  });
});
