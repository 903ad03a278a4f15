/**
 * The extra files a manifest lists in `files` (say, classes.txt from tag=dirname): each must be there and, in a
 * local directory, be a regular file. No checksum covers their bytes, so being there is all verify can prove.
 */
import { isHttpDeadline } from '../io/http-client.js';
import fs from 'node:fs/promises';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { isRemote, resolveLocation } from '../io/location.js';
import { openByteSource, type OpenSourceOptions } from '../io/open-source.js';

/** Reports through `problem` each file of `files` (names inside the dataset at `location`) that is missing or not a file. */
export async function checkExtraFiles(location: string, files: readonly string[], options: OpenSourceOptions, problem: (file: string, what: string) => void): Promise<void> {
  for (const file of files) {
    const where = resolveLocation(location, file);
    if (isRemote(where)) {
      // a server has no file types: a reply with a size is all there is to ask for
      const source = await openByteSource(where, options);
      try {
        await source.size();
      } catch (err) {
        if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
        problem(file, err.code === ErrorCodes.SHARD_MISSING ? 'is missing (the manifest lists it in files)' : err.message);
      } finally {
        await source.close();
      }
      continue;
    }
    try {
      const stat = await fs.stat(where);
      if (!stat.isFile()) problem(file, 'is not a regular file (the manifest lists it in files)');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problem(file, code === 'ENOENT' || code === 'ENOTDIR' ? 'is missing (the manifest lists it in files)' : `cannot be checked: ${(err as Error).message}`);
    }
  }
}
