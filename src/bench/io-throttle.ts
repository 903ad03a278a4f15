/**
 * Whether this machine could measure on an IOPS-limited device (cgroup block-I/O throttling as root), said in
 * the report so a reader knows why the slow-storage figures are projections only.
 */
import fs from 'node:fs';

function readable(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** One sentence for the report's notes. */
export function throttleSupport(): string {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const v2 = ['/sys/fs/cgroup/cgroup.controllers', '/sys/fs/cgroup/unified/cgroup.controllers'].map(readable).some((t) => t !== undefined && /\bio\b/.test(t));
  const v1 = fs.existsSync('/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device');
  const base = 'Not measured on an IOPS-limited device: the storage profiles below are projections from the counted operations.';
  if (!root) return `${base} Real throttling needs root (cgroup io.max or blkio.throttle.read_iops_device); this run was not root.`;
  if (!v2 && !v1) return `${base} This machine has no cgroup block-I/O controller (no io in cgroup v2 controllers, no v1 blkio).`;
  return `${base} This machine would allow it (${v2 ? 'cgroup v2 io.max' : 'cgroup v1 blkio.throttle.read_iops_device'} as root), but this version of the bench does not run throttled epochs yet.`;
}
