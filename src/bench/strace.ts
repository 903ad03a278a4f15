/**
 * The strace cross-check: an independent count of the system calls one epoch really made. A traced child runs
 * one epoch under `strace -f -c`; a second traced child does the same setup without the epoch (start Node, load
 * modules, open the dataset); the epoch's calls are the difference. The program's own counters are then
 * compared with it (report: `strace.agreement`).
 */
import { spawnSync } from 'node:child_process';

/** True when `strace -V` runs (installed, and allowed: containers may forbid ptrace). */
export function straceAvailable(): boolean {
  const r = spawnSync('strace', ['-f', '-c', '-o', '/dev/null', 'true'], { encoding: 'utf8' });
  return r.error === undefined && r.status === 0;
}

/**
 * Parses the summary table `strace -c` writes:
 * `% time  seconds  usecs/call  calls  errors  syscall` rows (errors may be blank), then a `total` row.
 * Returns calls by syscall name (the total row left out).
 */
export function parseStraceSummary(text: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const tokens = line.trim().split(/\s+/);
    if (tokens.length < 5 || tokens.length > 6 || !/^\d+(\.\d+)?$/.test(tokens[0] ?? '')) continue;
    const name = tokens[tokens.length - 1] as string;
    const n = Number(tokens[3]);
    if (name === 'total' || !/^[a-z_0-9]+$/.test(name) || !Number.isSafeInteger(n)) continue;
    calls[name] = (calls[name] ?? 0) + n;
  }
  return calls;
}

/** Calls in `a` minus those in `b`, per name, never below zero; names left at zero are dropped. */
export function subtractCalls(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, n] of Object.entries(a)) {
    const d = n - (b[name] ?? 0);
    if (d > 0) out[name] = d;
  }
  return out;
}
