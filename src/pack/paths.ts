/** Where a pack or merge writes, against what it reads: real paths, so that a symlink cannot hide one in the other. */
import fs from 'node:fs';
import path from 'node:path';

/** The real path of `p`, which may not exist yet: its nearest existing ancestor resolved, the rest joined on. */
export function realPathOf(p: string): string {
  const rest: string[] = [];
  let at = p;
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...rest.reverse());
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return p;
      rest.push(path.basename(at));
      at = parent;
    }
  }
}

/**
 * How path `a` stands to path `b`, compared as real paths (either may not exist yet): the same directory, inside
 * it, containing it, or apart (undefined). What pack, merge, derive and extract check before they write.
 */
export function pathOverlap(a: string, b: string): 'same' | 'inside' | 'contains' | undefined {
  const ra = realPathOf(path.resolve(a));
  const rb = realPathOf(path.resolve(b));
  return ra === rb ? 'same' : isInside(ra, rb) ? 'inside' : isInside(rb, ra) ? 'contains' : undefined;
}

/** True when `child` lies strictly inside `parent` (both absolute). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  // `..` as a whole segment: a directory named `..data` inside `parent` is inside it
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}
