/**
 * Measuring on an IOPS-limited device for real: a fresh cgroup with a block-I/O read limit (cgroup v1
 * `blkio.throttle.read_iops_device`, or cgroup v2 `io.max`) on the disk that holds the data. The bench moves each
 * throttled epoch child into the group before it reads, and removes the group afterwards. Where the machine does
 * not allow it (not root, no controller, no block device under the data), {@link throttleCapability} says why in
 * one sentence, and the run goes on without it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { blockDeviceOf, parseMountInfo, type BlockDevice, type MountInfoEntry } from './block-device.js';
import { readGroupReads, type GroupIoStatSource, type GroupReads } from './cgroup-io-stat.js';

/** What to limit: read requests per second, and optionally read bytes per second, on each device. */
export interface ThrottleLimits {
  readIops: number;
  readBps?: number;
}

export const V1_READ_IOPS = 'blkio.throttle.read_iops_device';
export const V1_READ_BPS = 'blkio.throttle.read_bps_device';
export const V2_IO_MAX = 'io.max';
/** Prefix of every group this module creates (the test checks none is left behind). */
export const THROTTLE_GROUP_PREFIX = 'shardkit-bench-';
/** How long removal waits for an exited child to leave the group (the kernel frees it asynchronously). */
const REMOVE_RETRY_MS = 50;
const REMOVE_ATTEMPTS = 40;

export type ThrottleCapability =
  | {
      ok: true;
      version: 1 | 2;
      /** The cgroup hierarchy's mount point (v1: the blkio hierarchy). */
      hierarchy: string;
      /** The disks holding the data, once each. */
      devices: BlockDevice[];
    }
  | { ok: false; why: string };

function readable(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** The mounted cgroup hierarchy that can throttle block I/O: v2 with the io controller first, else v1 blkio. */
export function findIoHierarchy(mounts: readonly MountInfoEntry[]): { version: 1 | 2; hierarchy: string } | undefined {
  for (const m of mounts) {
    if (m.fsType === 'cgroup2' && /\bio\b/.test(readable(path.join(m.mountPoint, 'cgroup.controllers')) ?? '')) return { version: 2, hierarchy: m.mountPoint };
  }
  for (const m of mounts) {
    if (m.fsType === 'cgroup' && m.superOptions.split(',').includes('blkio') && fs.existsSync(path.join(m.mountPoint, V1_READ_IOPS))) return { version: 1, hierarchy: m.mountPoint };
  }
  return undefined;
}

/**
 * Whether reads of `paths` can be throttled here, and with what. Never throws. Only `/proc/self/mountinfo` and
 * sysfs are read: nothing is created.
 */
export function throttleCapability(paths: readonly string[]): ThrottleCapability {
  if (process.platform !== 'linux') return { ok: false, why: `block-I/O throttling needs Linux cgroups; this is ${process.platform}` };
  if (!isRoot()) return { ok: false, why: 'real throttling needs root (to create a cgroup with io.max or blkio.throttle.read_iops_device); this run was not root' };
  const text = readable('/proc/self/mountinfo');
  if (text === undefined) return { ok: false, why: '/proc/self/mountinfo is not readable, so the cgroup mounts cannot be found' };
  const found = findIoHierarchy(parseMountInfo(text));
  if (found === undefined) return { ok: false, why: 'this machine has no cgroup block-I/O controller (no io in any cgroup v2 cgroup.controllers, no v1 blkio hierarchy with throttling)' };
  const devices = new Map<string, BlockDevice>();
  for (const p of paths) {
    const d = blockDeviceOf(p, text);
    if (!d.ok) return { ok: false, why: `no block device to throttle: ${d.why}` };
    devices.set(d.device.majorMinor, d.device);
  }
  return { ok: true, ...found, devices: [...devices.values()] };
}

/** A created throttle group. `remove()` must be called (in a finally) once every child in it has exited. */
export interface ThrottleGroup {
  version: 1 | 2;
  dir: string;
  devices: BlockDevice[];
  limits: ThrottleLimits;
  /** The limit lines as the kernel reads them back, for the report. */
  applied: string[];
  /** Where a child reads the group's counters. */
  statSource: GroupIoStatSource;
  /** Moves a process (all its threads) into the group, and checks that it is there. */
  join(pid: number): void;
  reads(): GroupReads | null;
  /** Removes the group (rmdir), waiting briefly for exited processes to leave it. */
  remove(): Promise<void>;
}

function write(file: string, text: string, what: string): void {
  try {
    fs.writeFileSync(file, text);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ShardkitError(ErrorCodes.IO, `Cannot ${what}: writing "${text.trim()}" to ${file} failed (${e.code ?? e.message})`, { file, cause: err });
  }
}

/** v2 only: the io controller must be enabled for the children of the hierarchy root. */
function enableV2Io(hierarchy: string): void {
  const control = path.join(hierarchy, 'cgroup.subtree_control');
  if (/\bio\b/.test(readable(control) ?? '')) return;
  write(control, '+io', `enable the io controller for child groups of ${hierarchy}`);
}

function limitLines(group: ThrottleGroup): string[] {
  const file = path.join(group.dir, group.version === 2 ? V2_IO_MAX : V1_READ_IOPS);
  const lines = (readable(file) ?? '').split('\n').filter((l) => l.trim() !== '');
  if (group.version === 1 && group.limits.readBps !== undefined) lines.push(...(readable(path.join(group.dir, V1_READ_BPS)) ?? '').split('\n').filter((l) => l.trim() !== ''));
  return lines;
}

async function removeGroup(dir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      fs.rmdirSync(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt >= REMOVE_ATTEMPTS) {
        throw new ShardkitError(ErrorCodes.IO, `Cannot remove the bench's cgroup ${dir} (${code ?? (err as Error).message}): remove it by hand with rmdir once no process is in it`, { file: dir, cause: err });
      }
      await sleep(REMOVE_RETRY_MS);
    }
  }
}

/**
 * Creates a fresh group under the hierarchy root with `limits` on every device of `cap`, and reads the limits
 * back to check the kernel took them. On any failure the group is removed again before the error is thrown.
 */
export async function createThrottleGroup(cap: Extract<ThrottleCapability, { ok: true }>, limits: ThrottleLimits): Promise<ThrottleGroup> {
  if (cap.version === 2) enableV2Io(cap.hierarchy);
  const dir = path.join(cap.hierarchy, `${THROTTLE_GROUP_PREFIX}${process.pid}-${Date.now().toString(36)}`);
  try {
    fs.mkdirSync(dir);
  } catch (err) {
    throw new ShardkitError(ErrorCodes.IO, `Cannot create the throttle cgroup ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { file: dir, cause: err });
  }
  const devices = cap.devices;
  const group: ThrottleGroup = {
    version: cap.version,
    dir,
    devices,
    limits,
    applied: [],
    statSource: { version: cap.version, dir, devices: devices.map((d) => d.majorMinor) },
    join(pid) {
      write(path.join(dir, 'cgroup.procs'), String(pid), `move process ${pid} into the throttle cgroup`);
      const members = (readable(path.join(dir, 'cgroup.procs')) ?? '').split('\n');
      if (!members.includes(String(pid))) throw new ShardkitError(ErrorCodes.IO, `Process ${pid} is not in ${dir}/cgroup.procs after moving it there`, { file: dir });
    },
    reads: () => readGroupReads(group.statSource),
    remove: () => removeGroup(dir),
  };
  try {
    for (const d of devices) {
      if (cap.version === 2) {
        const rbps = limits.readBps === undefined ? 'max' : String(limits.readBps);
        write(path.join(dir, V2_IO_MAX), `${d.majorMinor} riops=${limits.readIops} wiops=max rbps=${rbps} wbps=max`, `limit reads of ${d.devPath}`);
      } else {
        write(path.join(dir, V1_READ_IOPS), `${d.majorMinor} ${limits.readIops}`, `limit read IOPS of ${d.devPath}`);
        if (limits.readBps !== undefined) write(path.join(dir, V1_READ_BPS), `${d.majorMinor} ${limits.readBps}`, `limit read bandwidth of ${d.devPath}`);
      }
    }
    group.applied = limitLines(group);
    for (const d of devices) {
      const line = group.applied.find((l) => l.startsWith(`${d.majorMinor} `));
      const iops = line === undefined ? undefined : cap.version === 2 ? /\briops=(\d+)/.exec(line)?.[1] : line.split(/\s+/)[1];
      if (iops !== String(limits.readIops)) throw new ShardkitError(ErrorCodes.IO, `The kernel did not keep the read limit for ${d.devPath} in ${dir} (reads back: ${group.applied.join('; ') || 'nothing'})`, { file: dir });
    }
  } catch (err) {
    await removeGroup(dir).catch(() => undefined);
    throw err;
  }
  return group;
}

/** The notes sentence when no throttled epochs ran: why the slow-storage figures are projections only. */
export function throttleSupport(requested = false): string {
  const base = 'Not measured on an IOPS-limited device: the storage profiles (the PROJECTED section) are projections from the counted operations.';
  const root = isRoot();
  const v2 = ['/sys/fs/cgroup/cgroup.controllers', '/sys/fs/cgroup/unified/cgroup.controllers'].map(readable).some((t) => t !== undefined && /\bio\b/.test(t));
  const v1 = fs.existsSync(`/sys/fs/cgroup/blkio/${V1_READ_IOPS}`);
  if (!root) return `${base} Real throttling needs root (cgroup io.max or blkio.throttle.read_iops_device); this run was not root.`;
  if (!v2 && !v1) return `${base} This machine has no cgroup block-I/O controller (no io in cgroup v2 controllers, no v1 blkio).`;
  const how = v2 ? 'cgroup v2 io.max' : 'cgroup v1 blkio.throttle.read_iops_device';
  return requested ? `${base} Throttled epochs were asked for but could not run (see that section).` : `${base} This machine allows it (${how} as root): run with --throttle-iops N to measure on a device limited to N read IOPS.`;
}
