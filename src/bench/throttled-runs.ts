/**
 * The bench's throttled phase: each side's epochs again, cold cache, in fresh children that the parent moves into
 * a read-limited cgroup after they are set up and before they read; the group is removed afterwards, also when a
 * child fails. Where the machine does not allow it, the result says exactly why and nothing runs.
 */
import type { EpochJob } from './child-protocol.js';
import { createThrottleGroup, throttleCapability, type ThrottleGroup, type ThrottleLimits } from './io-throttle.js';
import type { SideName, ThrottleUnavailable } from './report.js';
import type { ThrottledMeasurement, ThrottledSideMeasurement } from './report-throttled.js';
import { runEpochChild } from './spawn-child.js';

export interface ThrottledRunsInput {
  limits: ThrottleLimits;
  sides: readonly SideName[];
  labels: Record<SideName, string>;
  /** Runs per side (alternated). */
  repeat: number;
  /** The epochs of each child of a run, in order (one each: a cold epoch needs a process that has mapped nothing). */
  childEpochs: number[][];
  /** Every path a side reads (raw dir, dataset, LMDB environment): their disks are the ones limited. */
  dataPaths: readonly string[];
  /** The job of a side's child; the throttled phase adds cold cache, the start handshake and the group counters. */
  jobOf: (side: SideName, epochs: number[], extra: Partial<EpochJob>) => EpochJob;
  workDir: string;
  /** Samples done by child number `child` (0, 1, ... in run order), which runs `side`. */
  onDone?: (side: SideName, child: number, samples: number) => void;
  /** Called with the group once it exists (tests look at it). */
  onGroup?: (group: ThrottleGroup) => void;
}

/** Runs the throttled epochs, or says why they cannot run here. Rejects only when a child fails. */
export async function runThrottledEpochs(input: ThrottledRunsInput): Promise<ThrottledMeasurement | ThrottleUnavailable> {
  const readBytesPerSecond = input.limits.readBps ?? null;
  const unavailable = (reason: string): ThrottleUnavailable => ({ status: 'unavailable', readIops: input.limits.readIops, readBytesPerSecond, reason });
  const cap = throttleCapability(input.dataPaths);
  if (!cap.ok) return unavailable(cap.why);
  let group: ThrottleGroup;
  try {
    group = await createThrottleGroup(cap, input.limits);
  } catch (err) {
    return unavailable((err as Error).message);
  }
  input.onGroup?.(group);
  const measured = new Map<SideName, ThrottledSideMeasurement>(input.sides.map((side) => [side, { side, label: input.labels[side], epochs: [] }]));
  try {
    let child = 0;
    for (let run = 0; run < input.repeat; run++) {
      for (const epochs of input.childEpochs) for (const side of input.sides) {
        const index = child++;
        const job = input.jobOf(side, epochs, { cold: true, waitForStart: true, groupIo: group.statSource });
        const { result } = await runEpochChild(job, input.workDir, {
          beforeStart: (pid) => group.join(pid),
          onDone: (d) => input.onDone?.(side, index, d),
        });
        const m = measured.get(side) as ThrottledSideMeasurement;
        for (const e of result.epochs) m.epochs.push({ seconds: e.seconds, samples: e.samples, reads: e.groupReads ?? null, cache: e.cache });
      }
    }
  } finally {
    await group.remove();
  }
  const lmdb = measured.get('lmdb');
  return {
    status: 'measured',
    version: group.version,
    readIops: input.limits.readIops,
    readBytesPerSecond,
    devices: group.devices.map((d) => ({ devPath: d.devPath, majorMinor: d.majorMinor, via: d.via })),
    limits: group.applied,
    raw: measured.get('raw') as ThrottledSideMeasurement,
    shards: measured.get('shards') as ThrottledSideMeasurement,
    ...(lmdb === undefined ? {} : { lmdb }),
  };
}
