import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { tmpDir } from './tmp.js';

export interface LoadedModules {
  /** Every module Node's ES module loader loaded, in order: file URLs, and `node:` names for built-ins. */
  urls: string[];
  /** The CommonJS modules in the require cache at the end (absolute paths): what the ESM hooks do not see. */
  cjs: string[];
  stdout: string;
}

/**
 * Runs `node ...args` with a module loader hook that appends every URL it loads to a file before the module loads
 * (synchronously: the list is complete when the process ends, whatever the timing), its threads' and children's
 * included.
 */
export function loadedModules(args: string[]): LoadedModules {
  const dir = tmpDir();
  const log = path.join(dir, 'loaded.txt');
  const hooks = path.join(dir, 'hooks.mjs');
  fs.writeFileSync(
    hooks,
    `import fs from 'node:fs';\nexport async function load(url, context, next) {\n  fs.appendFileSync(${JSON.stringify(log)}, url + '\\n');\n  return next(url, context);\n}\n`,
  );
  const register = `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hooks).href)});`;
  const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, ...args], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
  const urls = fs.readFileSync(log, 'utf8').split('\n').filter((u) => u !== '');
  const cjsLine = r.stdout.split('\n').find((l) => l.startsWith('CJS '));
  return { urls, cjs: cjsLine === undefined ? [] : (JSON.parse(cjsLine.slice(4)) as string[]), stdout: r.stdout };
}

/**
 * Runs an ES module of `script`'s text (from a file: children and threads inherit Node's flags, and refuse
 * `--input-type`), followed by a line `CJS [...require cache paths]`.
 */
export function loadedByScript(script: string): LoadedModules {
  const file = path.join(tmpDir(), 'script.mjs');
  fs.writeFileSync(file, `${script}\nimport { createRequire as __cr } from 'node:module';\nconsole.log('CJS ' + JSON.stringify(Object.keys(__cr(import.meta.url).cache)));\n`);
  return loadedModules([file]);
}
