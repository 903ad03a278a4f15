/**
 * The directories of an extract target, held open while their files are written (issue 26, item 4). A path is
 * resolved again at every open, so a local writer that swaps a checked directory for a symlink between the check and
 * the create can send the file outside the target (131 files in 2 runs of 3). Here each directory is opened with
 * O_DIRECTORY | O_NOFOLLOW relative to its parent's descriptor, and files are created and renamed through their
 * directory's descriptor: on Linux `/proc/self/fd/N/name` resolves N to the very directory opened, as openat(2)
 * does, whatever was renamed or swapped since. A symlink met on the way is refused (UNSAFE_PATH).
 *
 * Elsewhere (no /proc), {@link TargetDirs.open} returns undefined and extract checks each directory with lstat before
 * writing: a concurrent swap between that check and the create is then not caught (the README's security notes).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { ioError } from '../pack/fs-errors.js';

const DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;
const PROC_FD = '/proc/self/fd';

interface HeldDir {
  name: string;
  fd: number;
}

export class TargetDirs {
  /** The open directories from the root (index 0, name '') down to the last one used; keys come in order. */
  private readonly held: HeldDir[];

  private constructor(
    private readonly root: string,
    rootFd: number,
  ) {
    this.held = [{ name: '', fd: rootFd }];
  }

  /** Holds `root` open; undefined where directory descriptors cannot be used by path (no /proc/self/fd). */
  static open(root: string): TargetDirs | undefined {
    let fd: number;
    try {
      fd = fs.openSync(root, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    } catch (cause) {
      throw ioError(cause, 'open', root);
    }
    try {
      fs.statSync(`${PROC_FD}/${fd}/.`);
    } catch {
      fs.closeSync(fd);
      return undefined;
    }
    return new TargetDirs(root, fd);
  }

  /**
   * The path to create `relative` (a checked member path, `/`-separated) through its directory's descriptor,
   * creating and opening the directories on the way; and the path to name in messages.
   * @throws ShardkitError UNSAFE_PATH when a component is a symlink or not a directory.
   */
  fileFor(relative: string): { file: string; shown: string } {
    const parts = relative.split('/');
    const base = parts.pop() as string;
    let depth = 1;
    while (depth < this.held.length && depth - 1 < parts.length && this.held[depth]?.name === parts[depth - 1]) depth++;
    this.closeFrom(depth);
    for (let i = depth - 1; i < parts.length; i++) {
      const parent = this.held[this.held.length - 1] as HeldDir;
      const name = parts[i] as string;
      this.held.push({ name, fd: this.openDir(parent.fd, name, parts.slice(0, i + 1).join('/')) });
    }
    const dir = this.held[this.held.length - 1] as HeldDir;
    return { file: `${PROC_FD}/${dir.fd}/${base}`, shown: path.join(this.root, relative) };
  }

  /** Closes every directory, the root too. */
  close(): void {
    this.closeFrom(0);
  }

  private closeFrom(depth: number): void {
    while (this.held.length > depth) {
      const d = this.held.pop() as HeldDir;
      try {
        fs.closeSync(d.fd);
      } catch {
        // closed already
      }
    }
  }

  private openDir(parentFd: number, name: string, relative: string): number {
    const at = `${PROC_FD}/${parentFd}/${name}`;
    const shown = path.join(this.root, relative);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        return fs.openSync(at, DIR_FLAGS);
      } catch (cause) {
        const code = (cause as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' && attempt === 0) {
          try {
            fs.mkdirSync(at);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(err, 'create', shown);
          }
          continue;
        }
        if (code === 'ENOTDIR' || code === 'ELOOP') {
          const link = safeLstat(at)?.isSymbolicLink() === true;
          throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${shown} ${link ? 'is a symbolic link; extract never follows links in the target directory' : 'exists and is not a directory'}`, { file: shown });
        }
        throw ioError(cause, 'open', shown);
      }
    }
    throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${shown} vanished as it was created (another writer in the target?)`, { file: shown });
  }
}

function safeLstat(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}
