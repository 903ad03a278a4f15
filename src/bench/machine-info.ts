import os from 'node:os';
import { VERSION } from '../version.js';
import type { MachineInfo } from './report.js';

/** The machine facts a report needs to be compared with another: CPUs, memory, OS, Node and library versions. */
export function collectMachineInfo(versions: Record<string, string> = {}, filesystem?: { raw: string; dataset: string }): MachineInfo {
  const cpus = os.cpus();
  return {
    cpus: os.availableParallelism(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryBytes: os.totalmem(),
    os: { platform: os.platform(), release: os.release(), arch: os.arch() },
    node: process.version,
    shardkit: VERSION,
    versions: { ...versions },
    ...(filesystem ? { filesystem } : {}),
  };
}
