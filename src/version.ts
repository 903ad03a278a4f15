import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageJson(): { version: string } {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'shardkit' && typeof pkg.version === 'string') return { version: pkg.version };
    }
    const parent = path.dirname(dir);
    if (parent === dir) return { version: '0.0.0' };
    dir = parent;
  }
}

/** shardkit's version, recorded in every manifest. */
export const VERSION: string = findPackageJson().version;
