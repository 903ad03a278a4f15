import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import { BUILTIN_PROFILES, loadProfiles, mergeProfiles, projectEpoch, projectEpochBreakdown } from '../../src/bench/profiles.js';
import type { EpochOperationCounts, StorageProfile } from '../../src/bench/profiles.js';
import { tmpDir } from '../helpers/tmp.js';

const counts = fc.record({
  opens: fc.nat(1e6),
  stats: fc.nat(1e6),
  reads: fc.nat(1e6),
  closes: fc.nat(1e6),
  bytes: fc.nat(1e12),
  samples: fc.nat(1e6),
});
const profile = fc.constantFrom(...BUILTIN_PROFILES);
const concurrency = fc.integer({ min: 1, max: 512 });

describe('projectEpoch', () => {
  it('is the documented model: per-op latency over ops in flight plus bytes over bandwidth', () => {
    fc.assert(
      fc.property(counts, profile, concurrency, (c, p, k) => {
        const l = p.latencyMs;
        const expected =
          (c.opens * l.open + c.stats * l.stat + c.closes * l.close) / 1000 / Math.min(k, p.metadataInFlight) +
          (c.reads * l.read) / 1000 / Math.min(k, p.dataInFlight) +
          c.bytes / (p.bandwidthMBps * 1e6);
        expect(projectEpoch(c, p, k)).toBeCloseTo(expected, 9);
        const b = projectEpochBreakdown(c, p, k);
        expect(b.metadataSeconds + b.requestSeconds + b.transferSeconds).toBeCloseTo(b.seconds, 12);
      }),
    );
  });

  it('grows with every count and never gains from concurrency past the in-flight limits', () => {
    fc.assert(
      fc.property(counts, counts, profile, concurrency, (a, extra, p, k) => {
        const more: EpochOperationCounts = {
          opens: a.opens + extra.opens,
          stats: a.stats + extra.stats,
          reads: a.reads + extra.reads,
          closes: a.closes + extra.closes,
          bytes: a.bytes + extra.bytes,
          samples: a.samples + extra.samples,
        };
        expect(projectEpoch(more, p, k)).toBeGreaterThanOrEqual(projectEpoch(a, p, k));
        expect(projectEpoch(a, p, k + 1)).toBeLessThanOrEqual(projectEpoch(a, p, k));
        const cap = Math.max(p.metadataInFlight, p.dataInFlight);
        expect(projectEpoch(a, p, cap * 4)).toBeCloseTo(projectEpoch(a, p, cap), 12);
      }),
    );
  });

  it('prices per-file access above one read per sample on every built-in profile', () => {
    // Raw files: open + fstat + read + read-to-EOF + close per sample. Shards: one pread per sample, a handful of opens.
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 2_000_000 }), fc.integer({ min: 1000, max: 1_000_000 }), profile, concurrency, (samples, bytesPerSample, p, k) => {
        const bytes = samples * bytesPerSample;
        const raw = { opens: samples, stats: samples, reads: 2 * samples, closes: samples, bytes, samples };
        const shards = { opens: 8, stats: 8, reads: samples, closes: 8, bytes, samples };
        expect(projectEpoch(raw, p, k)).toBeGreaterThan(projectEpoch(shards, p, k));
      }),
    );
  });

  it('rejects a bad concurrency', () => {
    expect(() => projectEpoch({ opens: 1, stats: 0, reads: 1, closes: 1, bytes: 1, samples: 1 }, BUILTIN_PROFILES[0]!, 0)).toThrow(/Expected integer between 1/);
  });

  it('built-in profiles have distinct names, positive figures and a source', () => {
    expect(new Set(BUILTIN_PROFILES.map((p) => p.name)).size).toBe(BUILTIN_PROFILES.length);
    for (const p of BUILTIN_PROFILES) {
      expect(p.bandwidthMBps).toBeGreaterThan(0);
      expect(p.source).toMatch(/typical/);
      for (const v of Object.values(p.latencyMs)) expect(v).toBeGreaterThanOrEqual(0);
    }
    // Metadata gets dearer from local disk to NFS to Lustre to object storage: the order the model is meant to show.
    const byName = (n: string): StorageProfile => BUILTIN_PROFILES.find((p) => p.name === n)!;
    const openCost = ['nvme', 'nfs', 'lustre', 's3'].map((n) => byName(n).latencyMs.open);
    expect([...openCost].sort((a, b) => a - b)).toEqual(openCost);
  });
});

describe('loadProfiles', () => {
  const write = (value: unknown): string => {
    const file = join(tmpDir(), 'profiles.json');
    writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
    return file;
  };
  const expectInvalid = async (file: string, pattern: RegExp): Promise<void> => {
    const err = await loadProfiles(file).catch((e: unknown) => e);
    expect(isShardkitError(err, 'SHARDKIT_ERR_INVALID_ARG'), String(err)).toBe(true);
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toMatch(pattern);
  };

  it('round-trips the built-in profiles, as an array or under "profiles"', async () => {
    expect(await loadProfiles(write(BUILTIN_PROFILES))).toEqual(BUILTIN_PROFILES);
    expect(await loadProfiles(write({ profiles: BUILTIN_PROFILES }))).toEqual(BUILTIN_PROFILES);
  });

  it('fills defaults for optional fields', async () => {
    const file = write([{ name: 'lab-nfs', latencyMs: { open: 0.8, stat: 0.3, read: 0.6, close: 0.3 }, bandwidthMBps: 900 }]);
    const [p] = await loadProfiles(file);
    expect(p).toEqual({
      name: 'lab-nfs',
      label: 'lab-nfs',
      kind: 'filesystem',
      latencyMs: { open: 0.8, stat: 0.3, read: 0.6, close: 0.3 },
      bandwidthMBps: 900,
      metadataInFlight: 64,
      dataInFlight: 64,
      source: `user profile from ${file}`,
    });
  });

  it('names the file and the key of what is wrong', async () => {
    const good = { name: 'x', latencyMs: { open: 1, stat: 1, read: 1, close: 1 }, bandwidthMBps: 100 };
    await expectInvalid(write('{ not json'), /not valid JSON/);
    await expectInvalid(write([]), /non-empty array/);
    await expectInvalid(write({ other: [] }), /non-empty array/);
    await expectInvalid(write([{ ...good, latencyMs: { ...good.latencyMs, read: -1 } }]), /profiles\[0\]\.latencyMs\.read/);
    await expectInvalid(write([good, { ...good, bandwidthMBps: 0 }]), /profiles\[1\]\.bandwidthMBps/);
    await expectInvalid(write([{ ...good, latencyMs: { open: 1, stat: 1, read: 1 } }]), /latencyMs\.close/);
    await expectInvalid(write([{ ...good, dataInFlight: 1.5 }]), /dataInFlight/);
    await expectInvalid(write([{ ...good, kind: 'tape' }]), /kind/);
    await expectInvalid(write([{ ...good, latency: {} }]), /unknown key/);
    await expectInvalid(write([good, good]), /duplicate name/);
    await expectInvalid(write([{ ...good, name: 'has space' }]), /profiles\[0\]\.name/);
    await expectInvalid(join(tmpDir(), 'missing.json'), /Cannot read/);
  });

  it('mergeProfiles lets a user profile replace the built-in one of the same name', () => {
    const mine = { ...BUILTIN_PROFILES[1]!, latencyMs: { open: 9, stat: 9, read: 9, close: 9 } };
    const merged = mergeProfiles(BUILTIN_PROFILES, [mine]);
    expect(merged).toHaveLength(BUILTIN_PROFILES.length);
    expect(merged.filter((p) => p.name === mine.name)).toEqual([mine]);
  });
});
