/**
 * Fault injection for the kill tests of multi-step commits (test/e2e/append-faults.test.ts) and of a member streamed
 * into a shard (test/e2e/big-members.test.ts): with
 * `SHARDKIT_CRASH_AT=<name>` in the environment, the process kills itself with SIGKILL when it reaches the point of
 * that name, as a power cut or `kill -9` would stop it there. Unset, it does nothing.
 */
export function crashPoint(name: string): void {
  if (process.env.SHARDKIT_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
