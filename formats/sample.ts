/**
 * Samples and WebDataset keys. A sample is the group of files that share a key; each file is a member named by
 * its extension. key = relative path up to the first dot of the basename; ext = the rest
 * (`a/b.seg.png` -> key `a/b`, ext `seg.png`), exactly as WebDataset's tar reader groups members.
 */
export interface Sample {
  key: string;
  /** Member bytes by extension, in stored order. */
  members: Record<string, Uint8Array>;
}

/**
 * Sets member `ext` of a members object as an own, enumerable property, also when it is "__proto__" (a file named
 * `x.__proto__` is a member like any other; a plain assignment would set the object's prototype and lose it).
 */
export function setMember<T>(members: Record<string, T>, ext: string, value: T): void {
  if (ext === '__proto__') Object.defineProperty(members, ext, { value, enumerable: true, writable: true, configurable: true });
  else members[ext] = value;
}

/**
 * `name` as V8 keeps a property name (an internalized string): a store or load with it as a computed key takes the
 * inline cache's fast path. A member name decoded from index bytes is a fresh string, and every keyed store with one
 * went through V8's megamorphic store stub (seen in `perf` profiles of atSync). For names used over and over: it
 * makes one small object a call.
 */
export function propertyName(name: string): string {
  return Object.keys({ [name]: 0 })[0] as string;
}

export interface KeyAndExt {
  key: string;
  ext: string;
}

/**
 * How a file's relative path splits into a key and a member extension.
 * - `webdataset` (default): the key ends at the basename's FIRST dot (`a/b.seg.png` -> `a/b`, `seg.png`), as
 *   WebDataset's tar reader groups members.
 * - `path`: the key ends at the basename's LAST dot (`dog.0.jpg` -> `dog.0`, `jpg`), so Kaggle-style names stay
 *   apart. Tar member names are the same (key.ext is the original path), but WebDataset readers regroup them by
 *   the first dot.
 */
export type KeyRule = 'webdataset' | 'path';

export const KEY_RULES: readonly KeyRule[] = ['webdataset', 'path'];

/** The index of the dot that ends the key in `name` (a basename), under `rule`; -1 for none. */
export function keyDot(name: string, rule: KeyRule = 'webdataset'): number {
  return rule === 'path' ? name.lastIndexOf('.') : name.indexOf('.');
}

/** Splits a `/`-separated relative path into its key and member extension (WebDataset's rule unless told). */
export function splitKey(relativePath: string, rule: KeyRule = 'webdataset'): KeyAndExt {
  const slash = relativePath.lastIndexOf('/');
  const dot = rule === 'path' ? relativePath.lastIndexOf('.') : relativePath.indexOf('.', slash + 1);
  if (dot <= slash) return { key: relativePath, ext: '' };
  return { key: relativePath.slice(0, dot), ext: relativePath.slice(dot + 1) };
}

/**
 * Why a file's basename gives it no WebDataset key, or undefined when it has one. WebDataset's rule (base_plus_ext:
 * the key is the path up to the basename's first dot, and that part of the basename must not be empty) gives none
 * to a basename that starts with `.` (its readers skip such members; here the key would be empty or end in `/`),
 * and a basename that ends with its first dot (`q.`) would split into key `q` and an empty extension, which names
 * the file `q`: neither name comes back.
 */
export function noKeyReason(basename: string, rule: KeyRule = 'webdataset'): string | undefined {
  const dot = basename.indexOf('.');
  if (dot === 0) return "its name starts with '.'";
  // the path rule's key ends at the last dot: a name ending in a dot would lose it the same way
  if (rule === 'path' && dot > 0 && basename.endsWith('.')) return 'its name ends with a dot (an empty extension would name it without the dot)';
  if (dot >= 0 && dot === basename.length - 1) return 'its name ends with its first dot (an empty extension would name it without the dot)';
  return undefined;
}

/** The member's original relative path: the inverse of {@link splitKey}. */
export function memberPath(key: string, ext: string): string {
  return ext === '' ? key : `${key}.${ext}`;
}
