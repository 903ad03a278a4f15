import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** shardkit's package: its directory and version. */
export interface ShardkitPackage {
  dir: string;
  version: string;
}

/**
 * shardkit's own package.json, found upward from this module: src/ (vitest runs the sources), dist/src/ (the
 * compiled package) and dist/bin/ (the command line's bundle) all sit under it. Undefined when none is found.
 */
export const PACKAGE: ShardkitPackage | undefined = findPackage();

function findPackage(): ShardkitPackage | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'shardkit' && typeof pkg.version === 'string') return { dir, version: pkg.version };
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** shardkit's version, recorded in every manifest. */
export const VERSION: string = PACKAGE?.version ?? '0.0.0';
