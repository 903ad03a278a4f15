/**
 * Which block device holds a path: what a cgroup I/O limit must name (`MAJ:MIN`) to slow that path's reads.
 * Block-I/O throttling acts on a whole disk's request queue, so a partition is walked up to its disk; a
 * device-mapper or md device is a disk of its own and is throttled as itself. File systems with no block device
 * (overlay, tmpfs, NFS, ...) are reported as such: nothing there can be throttled.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A whole block device, as sysfs names it. */
export interface BlockDevice {
  major: number;
  minor: number;
  /** `MAJ:MIN`, the form cgroup files use. */
  majorMinor: string;
  /** `/dev/<name>` from the device's uevent (e.g. `/dev/vda`, `/dev/dm-0`). */
  devPath: string;
  /** How it was found, for the report: e.g. `st_dev 254:0 (/dev/vda)` or `partition 8:2 (sda2) -> disk 8:0 (sda)`. */
  via: string;
}

export type BlockDeviceLookup = { ok: true; device: BlockDevice } | { ok: false; why: string };

const SYS_DEV_BLOCK = '/sys/dev/block';

/** Linux dev_t split (glibc's gnu_dev_major / gnu_dev_minor), on the 64-bit value from a bigint stat. */
export function splitDeviceNumber(dev: bigint): { major: number; minor: number } {
  const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n));
  const minor = Number((dev & 0xffn) | ((dev >> 12n) & 0xffffff00n));
  return { major, minor };
}

/** One line of /proc/self/mountinfo: the fields this module needs. */
export interface MountInfoEntry {
  majorMinor: string;
  mountPoint: string;
  fsType: string;
  source: string;
  /** Per-superblock options (for cgroup v1 mounts: the controllers, e.g. `rw,blkio`). */
  superOptions: string;
}

/** Parses /proc/self/mountinfo (proc(5)): `id parent MAJ:MIN root mountpoint opts [optional...] - fstype source superopts`. */
export function parseMountInfo(text: string): MountInfoEntry[] {
  const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const out: MountInfoEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (fields.length < 10 || dash < 6) continue;
    out.push({ majorMinor: fields[2] as string, mountPoint: unescape(fields[4] as string), fsType: fields[dash + 1] as string, source: unescape(fields[dash + 2] as string), superOptions: fields[dash + 3] ?? '' });
  }
  return out;
}

/** The mount a path lives on: the longest mount point that is a prefix of its real path (the last such mount wins). */
export function mountOf(realPath: string, mounts: readonly MountInfoEntry[]): MountInfoEntry | undefined {
  let best: MountInfoEntry | undefined;
  for (const m of mounts) {
    const inside = m.mountPoint === '/' || realPath === m.mountPoint || realPath.startsWith(`${m.mountPoint}/`);
    if (inside && (best === undefined || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

function readSys(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function devName(sysDir: string): string | undefined {
  return /^DEVNAME=(.+)$/m.exec(readSys(path.join(sysDir, 'uevent')) ?? '')?.[1];
}

/**
 * The whole disk for a block device number: itself when it is a disk (including dm-* and md*), its parent when
 * it is a partition (sysfs has a `partition` file in a partition's directory, and the disk is the parent directory).
 */
export function wholeDisk(major: number, minor: number, found: string): BlockDeviceLookup {
  const link = path.join(SYS_DEV_BLOCK, `${major}:${minor}`);
  let sysDir: string;
  try {
    sysDir = fs.realpathSync(link);
  } catch {
    return { ok: false, why: `${found}: ${major}:${minor} is not a block device (no ${link})` };
  }
  const name = devName(sysDir) ?? path.basename(sysDir);
  if (!fs.existsSync(path.join(sysDir, 'partition'))) {
    const kind = name.startsWith('dm-') ? `device-mapper ${readSys(path.join(sysDir, 'dm', 'name')) ?? name}` : name;
    return { ok: true, device: { major, minor, majorMinor: `${major}:${minor}`, devPath: `/dev/${name}`, via: `${found} -> ${major}:${minor} (${kind})` } };
  }
  const diskDir = path.dirname(sysDir);
  const diskDev = readSys(path.join(diskDir, 'dev'));
  const m = /^(\d+):(\d+)$/.exec(diskDev ?? '');
  if (m === null) return { ok: false, why: `${found}: partition ${name} (${major}:${minor}) has no readable disk in ${diskDir}` };
  const diskName = devName(diskDir) ?? path.basename(diskDir);
  return {
    ok: true,
    device: { major: Number(m[1]), minor: Number(m[2]), majorMinor: `${m[1]}:${m[2]}`, devPath: `/dev/${diskName}`, via: `${found} -> partition ${major}:${minor} (${name}) -> disk ${m[1]}:${m[2]} (${diskName})` },
  };
}

/**
 * The block device holding `target` (a file or directory). Tries the file's st_dev first; when that is not a
 * block device (btrfs and overlay report anonymous device numbers), the mount's source device from
 * /proc/self/mountinfo. Never throws: the result says why there is none.
 */
export function blockDeviceOf(target: string, mountInfoText?: string): BlockDeviceLookup {
  let real: string;
  let dev: bigint;
  try {
    real = fs.realpathSync(target);
    dev = fs.statSync(real, { bigint: true }).dev;
  } catch (err) {
    return { ok: false, why: `cannot stat ${target}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
  const { major, minor } = splitDeviceNumber(dev);
  if (fs.existsSync(path.join(SYS_DEV_BLOCK, `${major}:${minor}`))) return wholeDisk(major, minor, `st_dev ${major}:${minor} of ${real}`);
  let text = mountInfoText;
  if (text === undefined) {
    try {
      text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    } catch {
      return { ok: false, why: `${real} is on device ${major}:${minor}, which is not a block device, and /proc/self/mountinfo is not readable` };
    }
  }
  const mount = mountOf(real, parseMountInfo(text));
  if (mount === undefined) return { ok: false, why: `${real} is on device ${major}:${minor}, which is not a block device, and no mount holds it` };
  if (mount.source.startsWith('/dev/')) {
    try {
      const rdev = fs.statSync(mount.source, { bigint: true });
      if (rdev.isBlockDevice()) {
        const d = splitDeviceNumber(rdev.rdev);
        return wholeDisk(d.major, d.minor, `mount ${mount.mountPoint} (${mount.fsType}) from ${mount.source}`);
      }
    } catch {
      // fall through to the reason below
    }
  }
  return { ok: false, why: `${real} is on a ${mount.fsType} file system (mount ${mount.mountPoint}, source ${mount.source}) with no block device to throttle` };
}
