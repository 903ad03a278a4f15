/**
 * The report's throttled section: cold-cache epochs measured inside a cgroup with a read-IOPS limit. Every figure
 * is derived here from what the throttled children measured; whether the throttle really applied is decided from
 * the kernel's own count of the group's reads, never assumed from the fact that the limit was written.
 */
import type { GroupReads } from './cgroup-io-stat.js';
import type { CacheDropResult } from './child-protocol.js';
import type { SideName, ThrottledDevice, ThrottledMeasured, ThrottledSection, ThrottledSide } from './report.js';
import { median } from './report-stats.js';

/** One throttled epoch as the child measured it. */
export interface ThrottledEpoch {
  seconds: number;
  samples: number;
  /** Reads the kernel charged to the group during the epoch; null when the counters could not be read. */
  reads: GroupReads | null;
  cache: CacheDropResult | null;
}

export interface ThrottledSideMeasurement {
  side: SideName;
  label: string;
  epochs: ThrottledEpoch[];
}

export interface ThrottledMeasurement {
  status: 'measured';
  version: 1 | 2;
  readIops: number;
  readBytesPerSecond: number | null;
  devices: ThrottledDevice[];
  limits: string[];
  raw: ThrottledSideMeasurement;
  shards: ThrottledSideMeasurement;
  lmdb?: ThrottledSideMeasurement;
}

/**
 * blk-throttle hands out its budget in time slices (100 ms by default), so an epoch may run up to one slice's
 * worth of I/O ahead of the steady rate; plus 5 % for timer granularity. Above that, the limit did not hold.
 */
export const THROTTLE_SLICE_SECONDS = 0.1;
export const THROTTLE_TOLERANCE = 1.05;

/** Most reads (or bytes) `limit` per second lets through in `seconds`, with the slack above. */
export function throttleAllowance(limit: number, seconds: number): number {
  return limit * (seconds + THROTTLE_SLICE_SECONDS) * THROTTLE_TOLERANCE;
}

/** Why an epoch does not confirm the throttle, or null when it does. */
export function epochThrottleProblem(e: ThrottledEpoch, readIops: number, readBps: number | null): string | null {
  if (e.reads === null) return 'the group\'s read counters could not be read';
  if (e.reads.ios === 0) return 'no read reached the throttled device from the group (served from the page cache)';
  if (e.reads.ios > throttleAllowance(readIops, e.seconds)) return `${e.reads.ios} reads in ${e.seconds.toFixed(3)} s is more than ${readIops} IOPS allow`;
  if (readBps !== null && e.reads.bytes > throttleAllowance(readBps, e.seconds)) return `${e.reads.bytes} bytes in ${e.seconds.toFixed(3)} s is more than ${readBps} B/s allow`;
  return null;
}

const ratio = (a: number, b: number): number | null => (b === 0 ? null : a / b);

function summarizeThrottledSide(m: ThrottledSideMeasurement, readIops: number, readBps: number | null): ThrottledSide & { problems: string[] } {
  if (m.epochs.length === 0) throw new RangeError(`${m.side}: no throttled epochs`);
  const seconds = m.epochs.map((e) => e.seconds);
  const medianSeconds = median(seconds);
  const samples = median(m.epochs.map((e) => e.samples));
  const problems = m.epochs.map((e, i) => {
    const p = epochThrottleProblem(e, readIops, readBps);
    return p === null ? null : `${m.side} epoch ${i + 1}: ${p}`;
  });
  return {
    side: m.side,
    label: m.label,
    epochSeconds: seconds,
    medianSeconds,
    minSeconds: Math.min(...seconds),
    maxSeconds: Math.max(...seconds),
    samples,
    samplesPerSecond: samples / medianSeconds,
    deviceReads: m.epochs.map((e) => e.reads?.ios ?? null),
    deviceReadBytes: m.epochs.map((e) => e.reads?.bytes ?? null),
    achievedIops: m.epochs.map((e) => (e.reads === null || e.seconds === 0 ? null : e.reads.ios / e.seconds)),
    coldVerified: m.epochs.every((e) => e.cache?.verified === true),
    throttleConfirmed: problems.every((p) => p === null),
    problems: problems.filter((p): p is string => p !== null),
  };
}

/** "cgroup blkio, 200 read IOPS on /dev/vda" */
function limitPhrase(m: ThrottledMeasurement): string {
  const bw = m.readBytesPerSecond === null ? '' : `, ${m.readBytesPerSecond / 1e6} MB/s`;
  return `${m.version === 2 ? 'cgroup io.max' : 'cgroup blkio'}, ${m.readIops} read IOPS${bw} on ${m.devices.map((d) => d.devPath).join(', ')}`;
}

export function summarizeThrottled(m: ThrottledMeasurement): ThrottledMeasured {
  const { readIops, readBytesPerSecond: readBps } = m;
  const raw = summarizeThrottledSide(m.raw, readIops, readBps);
  const shards = summarizeThrottledSide(m.shards, readIops, readBps);
  const lmdb = m.lmdb === undefined ? undefined : summarizeThrottledSide(m.lmdb, readIops, readBps);
  const all = [raw, shards, ...(lmdb ? [lmdb] : [])];
  const problems = all.flatMap((s) => s.problems);
  const confirmed = problems.length === 0;
  const strip = ({ problems: _p, ...side }: ThrottledSide & { problems: string[] }): ThrottledSide => side;
  const rule = `an epoch counts as throttled when the kernel charged the group at least one read on the device and no more than the limit allows (limit x (seconds + ${THROTTLE_SLICE_SECONDS} s slice) x ${THROTTLE_TOLERANCE})`;
  const counted = all.map((s) => `${s.side} ${s.deviceReads.map((r) => r ?? 'n/a').join('/')} reads at ${s.achievedIops.map((r) => (r === null ? 'n/a' : r.toFixed(0))).join('/')} IOPS`).join('; ');
  return {
    status: 'measured',
    confirmed,
    title: confirmed
      ? `Measured on an IOPS-limited device (${limitPhrase(m)})`
      : `NOT confirmed as throttled: cold-cache epochs in a cgroup limited to ${limitPhrase(m)}, where the limit did not demonstrably apply`,
    mechanism: m.version === 2 ? 'cgroup v2 io.max' : 'cgroup v1 blkio.throttle.read_iops_device',
    readIops,
    readBytesPerSecond: readBps,
    devices: m.devices.map((d) => ({ ...d })),
    limits: [...m.limits],
    confirmation: confirmed
      ? `Confirmed for every epoch from the group's own counters (${m.version === 2 ? 'io.stat rios' : 'blkio.throttle.io_serviced'}): ${counted}. Rule: ${rule}.`
      : `Not confirmed: ${problems.join('; ')}. These figures are cold-cache epochs, not throttled ones. Rule: ${rule}.`,
    sides: { raw: strip(raw), shards: strip(shards), ...(lmdb ? { lmdb: strip(lmdb) } : {}) },
    speedup: ratio(raw.medianSeconds, shards.medianSeconds),
    throughputRatio: ratio(shards.samplesPerSecond, raw.samplesPerSecond),
    ...(lmdb ? { lmdbVsShards: ratio(lmdb.medianSeconds, shards.medianSeconds) } : {}),
  };
}

/** The report section from what ran, or from why it could not. */
export function throttledSection(m: ThrottledMeasurement | Extract<ThrottledSection, { status: 'unavailable' }>): ThrottledSection {
  return m.status === 'measured' ? summarizeThrottled(m) : { ...m };
}
