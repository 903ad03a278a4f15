import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The command users run: package.json's `bin` (the bundle cli/bundle.mjs makes). */
export const CLI = path.join(ROOT, (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: { shardkit: string } }).bin.shardkit);

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs the BUILT CLI (`npm run build` first; `npm test` does). */
export function shardkit(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): CliResult {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build`);
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: options.cwd ?? ROOT, encoding: 'utf8', env: { ...process.env, ...options.env }, maxBuffer: 1 << 26 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Starts the CLI without waiting (for kill tests); `env` is added to this process's environment. */
export function shardkitAsync(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
}

/**
 * Runs the CLI with `args` and SIGKILLs it once the resume journal in `out` has more than `lines` lines (shards
 * finished); rejects when the command ends first. Resolves once the process is gone.
 */
export async function killAfterJournalLines(args: string[], out: string, lines: number): Promise<void> {
  const child = shardkitAsync(args);
  const journal = path.join(out, '.shardkit-work', 'journal.jsonl');
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (fs.existsSync(journal) && fs.readFileSync(journal, 'utf8').split('\n').length > lines) {
        clearInterval(timer);
        child.kill('SIGKILL');
        resolve();
      }
    }, 5);
    child.on('exit', () => {
      clearInterval(timer);
      reject(new Error(`${args[0]} finished before it could be killed`));
    });
  });
  await new Promise((r) => child.on('exit', r));
}

/** Every file under dir (relative paths) except those named in `except`, with their bytes. */
export function readTree(dir: string, except: string[] = []): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (!except.includes(e.name)) out.set(path.relative(dir, p), fs.readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

/**
 * Runs the BUILT CLI with RLIMIT_FSIZE at `kib` KiB (`ulimit -f`, in a child shell): a write past it fails with
 * EFBIG, as on a full disk. SIGXFSZ must be ignored for that, or the kernel kills the process instead (Node ignores
 * it at startup; the trap makes sure).
 */
export function shardkitWithFileLimit(args: string[], kib: number): CliResult {
  const script = `trap '' XFSZ; ulimit -f ${kib}; exec "$0" "$@"`;
  const r = spawnSync('bash', ['-c', script, process.execPath, CLI, ...args], { cwd: ROOT, encoding: 'utf8' });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
