import { execFileSync, spawnSync } from 'node:child_process';

/** True when `cmd` runs. In CI (CI=true) a missing tool is a failure, never a skip: .ci/run installs them all. */
export function hasTool(cmd: string, args: string[] = ['--version']): boolean {
  const ok = spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
  if (!ok && process.env.CI) throw new Error(`${cmd} is required in CI (installed by .ci/run) but does not run`);
  return ok;
}

export function run(cmd: string, args: string[], options: { cwd?: string; input?: string } = {}): string {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28, ...options });
}
