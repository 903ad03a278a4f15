/**
 * Which tar entries become sample members, and under which key and extension (SPEC "Adopting foreign tars").
 * A skipped entry is listed in the manifest's `skipped` with the reason returned here; nothing a tar names is
 * ever followed, created or resolved on disk.
 */
import { keyDot, type KeyRule } from '../../formats/sample.js';
import { TarType } from '../../formats/tar-header.js';
import type { TarEntry } from '../../formats/tar-scan.js';

export type MemberDecision = { key: string; ext: string; name: string } | { skip: string };

const TYPE_REASONS: Record<string, string> = {
  [TarType.hardLink]: 'hard link (links are never followed)',
  [TarType.symlink]: 'symbolic link (links are never followed)',
  [TarType.charDevice]: 'character device',
  [TarType.blockDevice]: 'block device',
  [TarType.directory]: 'directory',
  [TarType.fifo]: 'fifo',
};

const REGULAR_TYPES = new Set<string>([TarType.file, TarType.oldFile, TarType.contiguous]);

export interface MemberRuleOptions {
  /**
   * 'webdataset' (adopting foreign tars): members need an extension, as WebDataset's reader drops names without one,
   * and top-level `__name__` entries are WebDataset metadata. 'shardkit' (reindexing our own shards): any name the
   * writer can produce, extension-less members included.
   */
  style: 'webdataset' | 'shardkit';
  /** Where a member name's key ends (see KeyRule): a dataset packed with `--key-rule path` records 'path'. */
  keyRule?: KeyRule;
}

/** The member name an entry gives, after removing leading `./` segments (what `tar -C dir -cf x.tar .` writes). */
export function normalizedName(name: string): string {
  let n = name;
  while (n.startsWith('./')) n = n.slice(2);
  return n;
}

/** Decides what to do with one tar entry. */
export function classifyEntry(entry: TarEntry, options: MemberRuleOptions): MemberDecision {
  if (entry.sparse) return { skip: 'GNU sparse file (its stored data is not the file\'s bytes); make the tar without --sparse' };
  const typeReason = TYPE_REASONS[entry.type];
  if (typeReason !== undefined) return { skip: typeReason };
  if (!REGULAR_TYPES.has(entry.type)) return { skip: `unsupported tar entry type ${JSON.stringify(entry.type)}` };
  if (entry.name === undefined) return { skip: 'name is not valid UTF-8' };
  const name = normalizedName(entry.name);
  if (name.endsWith('/')) return { skip: 'directory (regular-file entry whose name ends in /)' };
  if (name.startsWith('/')) return { skip: 'absolute path' };
  if (name.includes('\\') || name.includes('\0')) return { skip: 'name contains a backslash or NUL' };
  const segments = name.split('/');
  if (segments.includes('..')) return { skip: 'path with a ".." segment' };
  if (segments.some((s) => s === '' || s === '.')) return { skip: 'path with an empty or "." segment' };
  const base = segments[segments.length - 1] as string;
  const dot = keyDot(base, options.keyRule);
  if (options.style === 'webdataset') {
    if (segments.length === 1 && base.startsWith('__') && base.endsWith('__')) return { skip: 'WebDataset metadata entry' };
    if (dot < 0) return { skip: 'no extension (WebDataset ignores it)' };
  }
  if (base.startsWith('.')) return { skip: 'hidden file: nothing before the first dot to use as a key' };
  // `q.` would be key `q` with an empty extension, which names the file `q`: not the member's name
  if (dot === base.length - 1) return { skip: `name ends in its ${options.keyRule === 'path' ? 'last' : 'first'} dot: the extension would be empty` };
  const cut = name.length - base.length + (dot < 0 ? base.length : dot);
  return { key: name.slice(0, cut), ext: dot < 0 ? '' : name.slice(cut + 1), name };
}

