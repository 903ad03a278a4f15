/**
 * Read I/O a cgroup was charged on given block devices: the kernel's own count, used to confirm that a throttled
 * epoch's reads really went through the limit (and how many there were). Read by the epoch child before and after
 * each epoch, so the figure covers the epoch only.
 *
 * cgroup v1: `blkio.throttle.io_serviced` / `blkio.throttle.io_service_bytes`, lines `MAJ:MIN Read N`.
 * cgroup v2: `io.stat`, lines `MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N`.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Where a group's counters are: plain JSON, so it can travel in an epoch job. */
export interface GroupIoStatSource {
  version: 1 | 2;
  /** The cgroup directory. */
  dir: string;
  /** `MAJ:MIN` of each throttled device. */
  devices: string[];
}

export interface GroupReads {
  /** Read requests the group issued to the devices (bios, as the throttle counts them). */
  ios: number;
  bytes: number;
}

export const V1_SERVICED = 'blkio.throttle.io_serviced';
export const V1_SERVICE_BYTES = 'blkio.throttle.io_service_bytes';
export const V2_IO_STAT = 'io.stat';

/** Sum of `MAJ:MIN Read N` lines for `devices` in a v1 blkio.throttle.io_serviced / io_service_bytes file. */
export function parseV1ReadCount(text: string, devices: readonly string[]): number {
  let n = 0;
  for (const line of text.split('\n')) {
    const [dev, op, value] = line.trim().split(/\s+/);
    if (op === 'Read' && dev !== undefined && devices.includes(dev)) n += Number(value);
  }
  return n;
}

/** Reads of `devices` in a v2 io.stat file. */
export function parseV2IoStat(text: string, devices: readonly string[]): GroupReads {
  const out: GroupReads = { ios: 0, bytes: 0 };
  for (const line of text.split('\n')) {
    const [dev, ...pairs] = line.trim().split(/\s+/);
    if (dev === undefined || !devices.includes(dev)) continue;
    for (const pair of pairs) {
      const [k, v] = pair.split('=');
      if (k === 'rios') out.ios += Number(v);
      if (k === 'rbytes') out.bytes += Number(v);
    }
  }
  return out;
}

/** The group's read counters now, or null when they cannot be read. */
export function readGroupReads(src: GroupIoStatSource): GroupReads | null {
  try {
    if (src.version === 2) return parseV2IoStat(fs.readFileSync(path.join(src.dir, V2_IO_STAT), 'utf8'), src.devices);
    return {
      ios: parseV1ReadCount(fs.readFileSync(path.join(src.dir, V1_SERVICED), 'utf8'), src.devices),
      bytes: parseV1ReadCount(fs.readFileSync(path.join(src.dir, V1_SERVICE_BYTES), 'utf8'), src.devices),
    };
  } catch {
    return null;
  }
}
