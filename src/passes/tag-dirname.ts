/** `tag=dirname`: the class of a sample is the name of the directory it sits in (ImageNet-style folders). */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import type { Pass } from './pass.js';
import type { Sample } from '../../formats/sample.js';

const encoder = new TextEncoder();

/** The parent directory name of a key (`train/cat/001` -> `cat`), or undefined for a key at the root. */
export function parentDirName(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return undefined;
  const parent = key.slice(0, slash);
  return parent.slice(parent.lastIndexOf('/') + 1);
}

export interface TagDirnameOptions {
  /** The class names in index order; when absent, prepare() collects them from the keys. */
  classes?: readonly string[];
  /**
   * For `append`: the dataset's class list, kept as it is (no class renumbered); prepare() adds the names it finds
   * that are not in it at the end, in byte order.
   */
  base?: readonly string[];
}

/**
 * A pass that adds member `cls` holding the class index in decimal ASCII (WebDataset's convention, e.g. `3`).
 * Classes are the sorted (byte order) unique parent directory names of all keys, collected by prepare(); the
 * class of `a/cat/001` is `cat`, the immediate parent (torchvision's ImageFolder takes the first level below the
 * root instead: the two agree for the usual `root/class/file` layout). An existing `cls` member is replaced.
 * Samples at the root have no directory: they are counted in stats().untagged and pass through, less a `cls` they
 * had from an earlier tag (see withoutStaleCls).
 * outputs() gives `classes.txt` (one name per line, line i = class i) and the manifest field `classes`.
 */
export function tagDirnamePass(options: TagDirnameOptions = {}): Pass {
  let classes: string[] | undefined = options.classes === undefined ? undefined : [...options.classes];
  let indexOf = classes === undefined ? undefined : indexClasses(classes);
  let tagged = 0;
  let untagged = 0;
  let staleClsRemoved = 0;
  return {
    name: 'tag',
    params: { source: 'dirname' },
    declares: CLASS_LIST_OUTPUTS,
    async prepare(keys) {
      const names = new Set<string>();
      for await (const key of keys) {
        const name = parentDirName(key);
        if (name !== undefined) names.add(name);
      }
      const base = options.base ?? [];
      const known = new Set(base);
      classes = [...base, ...[...names].filter((n) => !known.has(n)).sort(compareKeys)];
      indexOf = indexClasses(classes);
    },
    async run(sample) {
      if (indexOf === undefined) {
        throw new ShardkitError(ErrorCodes.INVALID_ARG, 'tag=dirname needs its class list: call prepare() with all keys, or pass classes');
      }
      const name = parentDirName(sample.key);
      if (name === undefined) {
        untagged++;
        const kept = withoutStaleCls(sample);
        if (kept !== sample) staleClsRemoved++;
        return kept;
      }
      const index = indexOf.get(name);
      if (index === undefined) {
        throw new ShardkitError(ErrorCodes.INPUT, `Sample ${sample.key} is in directory ${name}, which is not in the class list (keys changed since prepare()?)`, { key: sample.key });
      }
      tagged++;
      return { key: sample.key, members: { ...sample.members, cls: encoder.encode(String(index)) } };
    },
    prepared() {
      return classes;
    },
    outputs() {
      const list = classes ?? [];
      return { files: { 'classes.txt': encodeClassList(list) }, manifest: { classes: list } };
    },
    stats() {
      return { tagged, untagged, staleClsRemoved };
    },
  };
}

/** What a tag pass with class names leaves: classes.txt and the manifest field `classes`. */
/**
 * An untagged sample as a pass that writes the class list leaves it: without the `cls` member it may have had (from
 * an earlier tag pass, in a derive), since that indexed the class list this pass replaces (`cat` as 0 became the new
 * list's first class). The same sample when it has none.
 */
export function withoutStaleCls(sample: Sample): Sample {
  if (!Object.hasOwn(sample.members, 'cls')) return sample;
  const { cls: _stale, ...members } = sample.members;
  return { key: sample.key, members };
}

export const CLASS_LIST_OUTPUTS = { files: ['classes.txt'], manifest: ['classes'] } as const;

function indexClasses(classes: readonly string[]): Map<string, number> {
  return new Map(classes.map((name, i) => [name, i]));
}

/** `classes.txt`: one class name per line, line i (from 0) = class index i, newline-terminated. */
export function encodeClassList(classes: readonly string[]): Uint8Array {
  for (const name of classes) {
    if (/[\r\n]/.test(name)) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Class name ${JSON.stringify(name)} contains a line break and cannot be written to classes.txt`);
    }
  }
  return encoder.encode(classes.map((c) => `${c}\n`).join(''));
}
