/**
 * The output directory of a DatasetWriter (pack, derive) and of merge: what it may hold, what --force clears from it
 * (the files a dataset there owns, its pack-report.json, and shard-like names; nothing else of the user's), and
 * which shards of an interrupted write a resume keeps.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { MANIFEST_FILE, type Manifest } from '../../formats/manifest.js';
import { SHARD_INDEX_FILE } from '../../formats/shard-index.js';
import { INDEX_FILE, INDEX_FILE_NAME } from './commit.js';
import { APPEND_DIR } from './append-stage.js';
import { fsCall } from './fs-errors.js';
import { WORK_DIR, readJournal, type JournalShard } from './journal.js';
import { PACK_REPORT_FILE } from './pack-report.js';
import { isShardFileName } from './shard-names.js';
import { TEMP_PREFIX } from './replace-file.js';
import { LOCK_FILE, type WriteLock } from './write-lock.js';

/** pack's default output directory: `<source>.shards`, next to the source. */
export function defaultOutDir(source: string): string {
  return `${path.resolve(source).replace(/[\\/]+$/, '')}.shards`;
}

/** Where --force moves the manifest of the dataset it replaces until that dataset's files are gone. */
export const REPLACED_MANIFEST = '.shardkit-replaced-manifest.json';


/**
 * What the dataset itself keeps under `name`, if anything: an extra file of that name would replace it when the
 * dataset is committed (a shard or pack-report.json), be deleted by a later --force or resume (shard-like and
 * temporary names), or clash with the manifest or index.
 */
export function reservedNameUse(name: string): string | undefined {
  if (name === MANIFEST_FILE) return 'its manifest';
  if (name === LOCK_FILE) return "its writer's lock";
  if (name === REPLACED_MANIFEST) return 'the manifest a --force replaces';
  if (INDEX_FILE_NAME.test(name)) return 'its index';
  if (name === SHARD_INDEX_FILE) return 'its shard list for wids and WebDataset';
  if (name === APPEND_DIR) return 'an append in progress';
  if (name === PACK_REPORT_FILE) return "pack's report";
  if (isShardFileName(name)) return 'shard files';
  if (name.endsWith('.tmp') || name.startsWith(TEMP_PREFIX)) return 'temporary files';
  return undefined;
}

/**
 * Makes `dir` ready for the writer holding `lock` (see write-lock.ts): refuses to overwrite a dataset or an
 * interrupted write unless told to, and on resume returns the journal lines whose shards are intact.
 */
export function prepareDirectory(dir: string, workDir: string, resume: boolean, asked: boolean, options: Record<string, unknown>, lock: WriteLock): JournalShard[] | undefined {
  const rm = (p: string): void => fsCall('remove', p, () => fs.rmSync(p, { recursive: true, force: true }));
  const list = (d: string): string[] => fsCall('list', d, () => fs.readdirSync(d).filter((name) => name !== LOCK_FILE));
  const hasManifest = fs.existsSync(path.join(dir, MANIFEST_FILE));
  // a finished dataset next to a work directory: a write was killed after its commit, before it cleared up (no one
  // else writes here: the lock)
  if (hasManifest && fs.existsSync(workDir)) rm(workDir);
  // --force starts over whatever the journal holds, a damaged one too: only a run without it reads the journal
  const found = fs.existsSync(workDir) && !asked ? readJournal(dir) : undefined;
  // a write that failed before it finished a shard left nothing to keep: the next run starts over without --force
  const force = asked || (found?.failure !== undefined && found.shards.length === 0);
  const journal = force ? undefined : found;
  // the clean-up below deletes files by name: only in a directory that shardkit wrote, --force or not (a dead
  // writer's claimed lock says it wrote here, and so does the manifest a --force killed while it cleared the dataset
  // before had moved aside)
  if (!hasManifest && !fs.existsSync(workDir) && !fs.existsSync(path.join(dir, REPLACED_MANIFEST)) && list(dir).length > 0) {
    if (!lock.tookOverClaimed) {
      throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} is not empty and holds no shardkit dataset; write to a new or empty directory`, { file: dir });
    }
    if (!force) {
      // the dead writer's claim passes to this lock, left as its own mark for the --force this asks for
      lock.claim();
      lock.abandon();
      throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} holds what a killed shardkit write left (no manifest, no journal); use --force to clear it and write anew`, { file: dir });
    }
  }
  // from here the directory is shardkit's (empty, a dataset, an interrupted write, a dead writer's claimed one): a
  // --force killed while it clears it, or a write killed later, leaves this claim for the next writer
  lock.claim();
  const replaced = path.join(dir, REPLACED_MANIFEST);
  if (force) {
    // the manifest goes first, so the directory never looks like a dataset with half its files gone; moved aside, not
    // deleted, it still says which files that dataset owns to a --force run again after this one was killed
    if (hasManifest) fsCall('rename', replaced, () => fs.renameSync(path.join(dir, MANIFEST_FILE), replaced));
    const owned = ownedFiles(replaced);
    for (const name of list(dir)) {
      // pack-report.json describes the dataset replaced: left behind, it would describe this one wrongly (merge writes none)
      // an appended dataset's index has another name, and its previous one stays until the next append (SPEC)
      if (name === WORK_DIR || name === APPEND_DIR || name === PACK_REPORT_FILE || owned.has(name) || isShardFileName(name) || INDEX_FILE_NAME.test(name)) rm(path.join(dir, name));
    }
    rm(replaced);
  } else if (fs.existsSync(replaced)) {
    throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} holds part of a dataset a killed --force was replacing; use --force to finish clearing it`, { file: dir });
  } else if (hasManifest) {
    throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} already holds a finished dataset; use --force to replace it`, { file: dir });
  } else if (journal !== undefined && !resume) {
    const failed = journal.failure === undefined ? undefined : `${journal.failure.code}: ${journal.failure.message}`;
    throw new ShardkitError(
      ErrorCodes.OUTPUT_EXISTS,
      failed === undefined
        ? `${dir} holds an interrupted pack or derive; finish it with that command's --resume, or use --force to start over`
        : `${dir} holds a pack or derive that failed (${failed}); fix the cause and finish it with that command's --resume, or use --force to start over`,
      { file: dir },
    );
  }
  fsCall('create', workDir, () => fs.mkdirSync(workDir, { recursive: true }));
  for (const name of list(dir)) if (name.endsWith('.tmp') || name.startsWith(TEMP_PREFIX)) rm(path.join(dir, name));
  if (!resume || force || journal === undefined) return undefined;
  const { prepared: wasPrepared, source: wasSource, ...was } = journal.options;
  const { prepared, source, ...now } = options;
  if (wasSource !== source) {
    throw new ShardkitError(
      ErrorCodes.INPUT_CHANGED,
      `${dir}: the source dataset changed since the interrupted derive (index ${String(wasSource)}, now ${String(source)}), whose samples came from the old one; start over with --force`,
      { file: dir },
    );
  }
  if (JSON.stringify(was) !== JSON.stringify(now)) {
    const command = wasSource === undefined ? 'pack' : 'derive';
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `--resume needs the options of the interrupted ${command} in ${dir}: ${changedOptions(was, now).join(', ')}; ` +
        'run again with the same options, or start over with --force',
      { file: dir },
    );
  }
  if (wasPrepared !== prepared) {
    throw new ShardkitError(
      ErrorCodes.INPUT_CHANGED,
      `${dir}: what the passes prepared from the input (such as tag=dirname's class list) changed since the interrupted pack, whose samples used the old one; start over with --force`,
      { file: dir },
    );
  }
  const intact: JournalShard[] = [];
  for (const line of journal.shards) {
    const file = path.join(dir, line.shard.file);
    const size = fs.existsSync(file) ? fsCall('stat', file, () => fs.statSync(file).size) : -1;
    if (size !== line.shard.bytes) break;
    intact.push(line);
  }
  return intact;
}

/**
 * Files the manifest at `manifestPath` says belong to its dataset (the index and the wids shard index alone when
 * there is none: a write killed before its manifest may have written both).
 */
function ownedFiles(manifestPath: string): Set<string> {
  try {
    const m = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as Partial<Manifest>;
    return new Set([INDEX_FILE, SHARD_INDEX_FILE, ...(m.shards ?? []).map((s) => s.file), ...(m.files ?? [])].filter((f) => typeof f === 'string' && !f.includes('/')));
  } catch {
    return new Set([INDEX_FILE, SHARD_INDEX_FILE]);
  }
}

/** The command-line flag of each option a journal records (see DatasetWriter's `decisive` options). */
const OPTION_FLAGS: Record<string, string> = {
  layout: '--layout',
  compress: '--compress',
  shardBytes: '--shard',
  pageSize: '--page-size',
  shardPrefix: '--part',
  passes: '--pass',
  'input.keyRule': '--key-rule',
  'input.include': '--include',
  'input.exclude': '--exclude',
  'input.includeHidden': '--include-hidden',
  'input.followSymlinks': '--follow-symlinks',
  'input.groupNumbered': '--group-numbered',
};

/** "--page-size was 4096, now 8192" for each option that differs between a journal's and this run's. */
export function changedOptions(was: Record<string, unknown>, now: Record<string, unknown>): string[] {
  const flat = (options: Record<string, unknown>): Map<string, string> => {
    const out = new Map<string, string>();
    for (const [name, value] of Object.entries(options)) {
      if (name === 'input' && typeof value === 'object' && value !== null) {
        for (const [inner, v] of Object.entries(value)) out.set(`input.${inner}`, JSON.stringify(v));
      } else out.set(name, JSON.stringify(value));
    }
    return out;
  };
  const before = flat(was);
  const after = flat(now);
  const names = [...new Set([...before.keys(), ...after.keys()])].filter((name) => before.get(name) !== after.get(name));
  return names.map((name) => `${OPTION_FLAGS[name] ?? name} was ${before.get(name) ?? 'not set'}, now ${after.get(name) ?? 'not set'}`);
}
