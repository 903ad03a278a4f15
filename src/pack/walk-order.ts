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
import { compareKeys, isSimpleKey } from '../../formats/key-order.js';
import { keyDot, type KeyRule } from '../../formats/sample.js';

export type WalkOrder = 'sample' | 'path';

/**
 * The sort key of a listing entry, one string: `name` (or `name/` for a directory) in path order; in sample order
 * `stem NUL ext NUL name`, where the name breaks ties between names with one (stem, ext), e.g. `a` and `a.`, so the
 * order never depends on readdir. No name holds NUL, the smallest character, so comparing these strings compares
 * the (stem, ext, name) tuples, shorter prefix first: one string comparison per pair instead of up to three.
 */
export function listingSortKey(name: string, isDirectory: boolean, order: WalkOrder, rule: KeyRule = 'webdataset'): string {
  if (isDirectory) return `${name}/`;
  if (order === 'path') return name;
  // the key's end: the first dot (WebDataset) or the last (the path rule), as splitKey cuts it
  const dot = keyDot(name, rule);
  if (dot < 0) return `${name}\0\0${name}`;
  return `${name.slice(0, dot)}\0${name.slice(dot + 1)}\0${name}`;
}

/**
 * Sorts a listing by its entries' sort keys in UTF-8 byte order: JavaScript's native comparison when no key holds a
 * character it orders differently (see isSimpleKey), compareKeys otherwise.
 */
export function sortListing<T extends { sortKey: string }>(listing: T[]): T[] {
  if (listing.every((e) => isSimpleKey(e.sortKey))) return listing.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
  return listing.sort((a, b) => compareKeys(a.sortKey, b.sortKey));
}
