/**
 * The two orders a source walk can yield files in, and how one directory listing is sorted to produce them
 * without ever holding more than one listing per directory level.
 *
 * - `'path'`: UTF-8 byte order of the full relative path (what `find . -type f | LC_ALL=C sort` prints).
 * - `'sample'`: byte order of the WebDataset key, then of the member extension. This is the order `pack` uses:
 *   every sample's members are adjacent and samples come in key order, which the index needs. The two orders
 *   agree except where a name holds a character below `.` right after a key (`a-2.jpg` sorts before `a.jpg` by
 *   path, after it by key) or a directory name holds a dot (`a.d/x.jpg` sorts between `a.cls` and `a.png` by
 *   path). No bounded buffer can regroup path order into sample order (`a.b/` may hold a million files that sit
 *   between `a.cls` and `a.png`), so the walker sorts each listing the right way instead.
 *
 * Why sorting one listing suffices: every path below directory `d` starts with `d/`, and no sibling's sort key
 * can start with `d/` (names hold no `/`). So a directory sorts as the string `d/`, and comparing a sibling
 * against `d/` gives the same answer as comparing it against any path below `d`.
 */
import { compareKeys } from '../../formats/key-order.js';

export type WalkOrder = 'sample' | 'path';

/** The sort key of one directory entry within its listing. */
export interface ListingSortKey {
  primary: string;
  secondary: string;
  /** Breaks ties between names with one (stem, ext), e.g. `a` and `a.`, so the order never depends on readdir. */
  name: string;
}

/** The sort key of a listing entry: `name` (or `name/` for a directory) in path order; (stem, ext) in sample order. */
export function listingSortKey(name: string, isDirectory: boolean, order: WalkOrder): ListingSortKey {
  if (isDirectory) return { primary: `${name}/`, secondary: '', name };
  if (order === 'path') return { primary: name, secondary: '', name };
  const dot = name.indexOf('.');
  if (dot < 0) return { primary: name, secondary: '', name };
  return { primary: name.slice(0, dot), secondary: name.slice(dot + 1), name };
}

export function compareListingKeys(a: ListingSortKey, b: ListingSortKey): number {
  return compareKeys(a.primary, b.primary) || compareKeys(a.secondary, b.secondary) || compareKeys(a.name, b.name);
}
