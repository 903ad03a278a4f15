/**
 * How much of a process's resident memory is a side's data files mapped into it: the shards (the native addon
 * reads local shards out of a memory map) or LMDB's data.mdb. Those pages are page cache, shared with every other
 * reader of the files and reclaimable, but the kernel counts them in the process's RSS, so a side that maps its
 * data shows a larger peak RSS than one that reads it with read(2) into the heap. The bench reports both.
 */
import fs from 'node:fs';
import path from 'node:path';
import { realPathOf } from '../pack/paths.js';

/**
 * Sum of the `Rss:` of the mappings in a `/proc/PID/smaps` text whose file lies inside one of `dirs` (absolute
 * paths). Mapping headers are `start-end perms offset dev inode [pathname]`; a mapped file that was deleted ends
 * in ` (deleted)` and still counts.
 */
export function residentMappedBytes(smaps: string, dirs: readonly string[]): number {
  // the kernel writes a newline in a path as \012, as in /proc/PID/maps
  const roots = dirs.map((d) => (d.endsWith(path.sep) ? d : `${d}${path.sep}`).replaceAll('\n', '\\012'));
  let inside = false;
  let kb = 0;
  for (const line of smaps.split('\n')) {
    const header = MAPPING.exec(line);
    if (header !== null) {
      const file = (header[1] ?? '').replace(DELETED, '');
      inside = file !== '' && roots.some((root) => file.startsWith(root));
      continue;
    }
    if (inside && line.startsWith('Rss:')) kb += Number(/^Rss:\s+(\d+)\s+kB/.exec(line)?.[1] ?? 0);
  }
  return kb * 1024;
}

/** A mapping's header line; group 1 is its pathname (empty for anonymous memory). */
const MAPPING = /^[0-9a-f]+-[0-9a-f]+\s+\S{4}\s+[0-9a-f]+\s+\S+\s+\d+\s*(.*)$/;
const DELETED = / \(deleted\)$/;

/**
 * Resident bytes of files inside `dirs` (any paths) mapped into this process now ({@link residentMappedBytes} of
 * /proc/self/smaps), or null where there is no such file (not Linux, /proc not mounted).
 */
export function ownResidentMappedBytes(dirs: readonly string[]): number | null {
  let smaps: string;
  try {
    smaps = fs.readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return null;
  }
  // the kernel names a mapped file by its real path
  return residentMappedBytes(
    smaps,
    dirs.map((d) => realPathOf(path.resolve(d))),
  );
}
