/**
 * Throttled bench epochs: device discovery checked against stat(1) and lsblk(8), cgroup setup and teardown on
 * the real cgroup hierarchy, and a real run on a device limited to 200 read IOPS whose epoch time must obey the
 * physics (files / IOPS). Skipped with the reason only where the machine does not allow throttling and CI is
 * unset; CI runs as root on a machine that allows it, so there it fails instead.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockDeviceOf, mountOf, parseMountInfo, splitDeviceNumber } from '../../src/bench/block-device.js';
import { parseV1ReadCount, parseV2IoStat } from '../../src/bench/cgroup-io-stat.js';
import { chartSpecs } from '../../src/bench/charts.js';
import { createThrottleGroup, throttleCapability, THROTTLE_GROUP_PREFIX } from '../../src/bench/io-throttle.js';
import { renderHtml } from '../../src/bench/render-html.js';
import { renderMarkdown } from '../../src/bench/render-md.js';
import { buildReport } from '../../src/bench/report-build.js';
import { throttleAllowance, type ThrottledMeasurement, type ThrottledSideMeasurement } from '../../src/bench/report-throttled.js';
import type { BenchReport } from '../../src/bench/report.js';
import { runBench } from '../../src/bench/run-bench.js';
import { makeMeasurements } from '../helpers/bench-measurements.js';
import { shardkit } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const schema = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../../src/bench/report-schema.json', import.meta.url)), 'utf8')) as object;
const validate = new Ajv2020({ strict: true, allErrors: true, validateFormats: false }).compile(schema);
const asJson = (r: BenchReport): unknown => JSON.parse(JSON.stringify(r));

const capability = throttleCapability([os.tmpdir()]);
const skipReason = capability.ok ? null : capability.why;
const inCi = process.env.CI !== undefined && process.env.CI !== '';

/** Groups this module made that exist now, anywhere a cgroup hierarchy is mounted. */
function leftoverGroups(): string[] {
  const text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  return parseMountInfo(text)
    .filter((m) => m.fsType === 'cgroup' || m.fsType === 'cgroup2')
    .flatMap((m) => {
      try {
        return fs.readdirSync(m.mountPoint).filter((n) => n.startsWith(THROTTLE_GROUP_PREFIX)).map((n) => path.join(m.mountPoint, n));
      } catch {
        return [];
      }
    });
}

describe('block device discovery', () => {
  it('splits a 64-bit dev_t the way glibc makedev composes it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), (major, minor) => {
        const M = BigInt(major);
        const m = BigInt(minor);
        const dev = ((M & 0xfffn) << 8n) | ((M & 0xfffff000n) << 32n) | (m & 0xffn) | ((m & 0xffffff00n) << 12n);
        expect(splitDeviceNumber(dev)).toEqual({ major, minor });
      }),
    );
  });

  it('finds the disk stat(1) and lsblk(8) name for a temp directory', () => {
    const dir = tmpDir('shardkit-throttle-dev-');
    const st = spawnSync('stat', ['-c', '%Hd:%Ld', dir], { encoding: 'utf8' });
    expect(st.status, st.stderr).toBe(0);
    const majMin = st.stdout.trim();
    const found = blockDeviceOf(dir);
    if (!fs.existsSync(`/sys/dev/block/${majMin}`)) {
      // overlay/tmpfs/btrfs: st_dev is anonymous; the lookup must then either name the mount's source disk or say why not.
      if (!found.ok) expect(found.why).toMatch(/block device/);
      return;
    }
    expect(found.ok, found.ok ? '' : found.why).toBe(true);
    if (!found.ok) return;
    const ls = spawnSync('lsblk', ['-nrpo', 'MAJ:MIN,TYPE,PKNAME,NAME'], { encoding: 'utf8' });
    expect(ls.status, ls.stderr).toBe(0);
    const rows = ls.stdout.trim().split('\n').map((l) => l.split(' '));
    const row = rows.find((r) => r[0] === majMin);
    expect(row, `lsblk lists ${majMin}`).toBeDefined();
    // A partition is throttled through its disk (lsblk's PKNAME); anything else is itself.
    const diskName = row![1] === 'part' ? row![2]! : row![3]!;
    const disk = rows.find((r) => r[3] === diskName)!;
    expect(found.device.majorMinor).toBe(disk[0]);
    expect(found.device.devPath).toBe(diskName);
  });

  it('parses mountinfo (escaped spaces, optional fields) and picks the longest mount', () => {
    const text = [
      '27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
      '40 27 0:38 / /mnt/with\\040space rw,relatime - tmpfs tmp\\040fs rw,size=4k',
      '41 27 0:39 / /mnt rw - overlay overlay rw,lowerdir=/a',
      '38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio',
    ].join('\n');
    const mounts = parseMountInfo(text);
    expect(mounts.map((m) => m.mountPoint)).toEqual(['/', '/mnt/with space', '/mnt', '/sys/fs/cgroup/blkio']);
    expect(mounts[1]).toMatchObject({ fsType: 'tmpfs', source: 'tmp fs', majorMinor: '0:38' });
    expect(mounts[3]!.superOptions.split(',')).toContain('blkio');
    expect(mountOf('/mnt/with space/x', mounts)?.fsType).toBe('tmpfs');
    expect(mountOf('/mnt/other', mounts)?.fsType).toBe('overlay');
    expect(mountOf('/mntx', mounts)?.fsType).toBe('ext4');
  });

  it('says why a file system with no block device cannot be throttled', () => {
    const shm = fs.existsSync('/dev/shm') ? '/dev/shm' : '/proc';
    const found = blockDeviceOf(shm);
    expect(found.ok).toBe(false);
    if (!found.ok) expect(found.why).toMatch(/(tmpfs|proc).*no block device/);
    const cap = throttleCapability([os.tmpdir(), shm]);
    expect(cap.ok).toBe(false);
  });

  it('reads v1 and v2 group counters for the listed devices only', () => {
    const v1 = '254:0 Read 402\n254:0 Write 7\n8:0 Read 5\nTotal 414\n';
    expect(parseV1ReadCount(v1, ['254:0'])).toBe(402);
    expect(parseV1ReadCount(v1, ['254:0', '8:0'])).toBe(407);
    const v2 = '254:0 rbytes=4096 wbytes=0 rios=3 wios=0 dbytes=0 dios=0\n8:0 rbytes=1 wbytes=0 rios=1 wios=0\n';
    expect(parseV2IoStat(v2, ['254:0'])).toEqual({ ios: 3, bytes: 4096 });
  });
});

function throttledSide(side: 'raw' | 'shards', reads: number[], seconds: number[]): ThrottledSideMeasurement {
  return {
    side,
    label: side,
    epochs: seconds.map((s, i) => ({ seconds: s, samples: 300, reads: { ios: reads[i]!, bytes: reads[i]! * 4096 }, cache: { dropped: true, verified: true, method: 'drop_caches' } })),
  };
}

function throttledInput(raw: number[], shards: number[]): ThrottledMeasurement {
  return {
    status: 'measured',
    version: 1,
    readIops: 200,
    readBytesPerSecond: null,
    devices: [{ devPath: '/dev/vda', majorMinor: '254:0', via: 'st_dev 254:0' }],
    limits: ['254:0 200'],
    raw: throttledSide('raw', raw, [2, 2.2]),
    shards: throttledSide('shards', shards, [0.5, 0.6]),
  };
}

describe('throttled report section', () => {
  it('is confirmed, labelled and validated when every epoch stayed within the limit', async () => {
    const report = buildReport({ ...makeMeasurements(3), throttled: throttledInput([390, 420], [60, 70]) });
    const t = report.throttled!;
    expect(t.status).toBe('measured');
    if (t.status !== 'measured') return;
    expect(t.confirmed).toBe(true);
    expect(t.title).toBe('Measured on an IOPS-limited device (cgroup blkio, 200 read IOPS on /dev/vda)');
    expect(t.speedup).toBeCloseTo(2.1 / 0.55, 12);
    expect(t.sides.raw.achievedIops[0]).toBeCloseTo(390 / 2, 12);
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    const md = renderMarkdown(report);
    expect(md).toContain(`## ${t.title}`);
    // Its own section: after the unthrottled tables, before the projections.
    expect(md.indexOf(t.title)).toBeGreaterThan(md.indexOf('## Operations per epoch'));
    expect(md.indexOf(t.title)).toBeLessThan(md.indexOf('## PROJECTED'));
    expect(chartSpecs(report).filter((c) => c.throttled).map((c) => c.id)).toEqual(['throttled-epoch-time']);
    const html = await renderHtml(report);
    expect(html).toMatch(/<div class="throttled" id="throttled">.*Measured on an IOPS-limited device/s);
    expect(html).toContain('id="chart-throttled-epoch-time"');
  });

  it('says NOT confirmed when reads exceeded the limit or never reached the device', () => {
    const over = Math.ceil(throttleAllowance(200, 2)) + 1;
    for (const raw of [[over, 400], [0, 400]]) {
      const report = buildReport({ ...makeMeasurements(4), throttled: throttledInput(raw, [60, 70]) });
      const t = report.throttled!;
      if (t.status !== 'measured') throw new Error('expected measured');
      expect(t.confirmed).toBe(false);
      expect(t.sides.raw.throttleConfirmed).toBe(false);
      expect(t.sides.shards.throttleConfirmed).toBe(true);
      expect(t.title).toMatch(/^NOT confirmed as throttled/);
      expect(t.title).not.toMatch(/^Measured on an IOPS-limited device/);
      expect(t.confirmation).toMatch(/raw epoch 1: /);
      expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it('records why throttled epochs could not run', () => {
    const report = buildReport({ ...makeMeasurements(5), throttled: { status: 'unavailable', readIops: 200, readBytesPerSecond: null, reason: 'this run was not root' } });
    expect(report.throttled).toEqual({ status: 'unavailable', readIops: 200, readBytesPerSecond: null, reason: 'this run was not root' });
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    expect(renderMarkdown(report)).toContain('this run was not root');
    expect(chartSpecs(report).some((c) => c.throttled)).toBe(false);
  });
});

if (skipReason !== null && inCi) {
  it('CI machine allows cgroup block-I/O throttling', () => {
    expect.fail(`CI runs as root on a machine with a blkio/io controller, but: ${skipReason}`);
  });
}

describe.skipIf(skipReason !== null)(`throttled epochs on this machine${skipReason === null ? '' : ` (SKIPPED: ${skipReason})`}`, () => {
  it('creates a limited group, moves a process in, and leaves nothing behind', async () => {
    if (!capability.ok) return;
    const before = leftoverGroups();
    const group = await createThrottleGroup(capability, { readIops: 123 });
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      expect(fs.existsSync(group.dir)).toBe(true);
      const d = capability.devices[0]!;
      expect(group.applied.some((l) => l.startsWith(`${d.majorMinor} `) && /\b123\b/.test(l))).toBe(true);
      group.join(sleeper.pid!);
      const line = fs.readFileSync(`/proc/${sleeper.pid}/cgroup`, 'utf8');
      expect(line).toContain(path.basename(group.dir));
      expect(group.reads()).not.toBeNull();
    } finally {
      const exited = new Promise((r) => sleeper.once('exit', r));
      sleeper.kill('SIGKILL');
      await exited;
      await group.remove();
    }
    expect(fs.existsSync(group.dir)).toBe(false);
    expect(leftoverGroups()).toEqual(before);
  });

  it('runs cold epochs on a device limited to 200 read IOPS and confirms the throttle held', async () => {
    const root = tmpDir('shardkit-throttle-run-');
    const raw = path.join(root, 'raw');
    const files = 240;
    for (let i = 0; i < files; i++) {
      const dir = path.join(raw, `c${i % 6}`);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `s${String(i).padStart(4, '0')}.bin`), randomBytes(4096 + ((i * 2654435761) % 12288)));
    }
    const ds = path.join(root, 'ds');
    const packed = shardkit(['pack', raw, '--out', ds, '--quiet']);
    expect(packed.status, packed.stderr).toBe(0);
    const iops = 200;
    const before = leftoverGroups();
    const report = await runBench({ rawDir: raw, dataset: ds, epochs: 1, repeat: 1, strace: false, throttle: { readIops: iops } });
    expect(leftoverGroups()).toEqual(before);
    expect(validate(asJson(report)), JSON.stringify(validate.errors)).toBe(true);
    const t = report.throttled!;
    expect(t.status, t.status === 'unavailable' ? t.reason : '').toBe('measured');
    if (t.status !== 'measured') return;
    expect(t.confirmed, t.confirmation).toBe(true);
    expect(t.title).toMatch(new RegExp(`^Measured on an IOPS-limited device \\(cgroup (blkio|io\\.max), ${iops} read IOPS on /dev/\\S+\\)$`));
    const r = t.sides.raw;
    expect(r.coldVerified).toBe(true);
    // Cold cache: every file's data is at least one read request, and the group may issue at most `iops` a second.
    expect(r.deviceReads[0]).toBeGreaterThanOrEqual(files);
    expect(r.epochSeconds[0]).toBeGreaterThanOrEqual(((r.deviceReads[0] ?? 0) / iops) * 0.8);
    expect(r.epochSeconds[0]).toBeGreaterThanOrEqual((files / iops) * 0.8);
    // The unthrottled, warm epochs are kept apart and are not slowed down to the limit.
    expect(report.sides.raw.epochSeconds[0]).toBeLessThan(r.epochSeconds[0]!);
    expect(report.notes.some((n) => n.startsWith('Not measured on an IOPS-limited device'))).toBe(false);
    expect(renderMarkdown(report)).toContain(`## ${t.title}`);
  }, 60_000);
});
