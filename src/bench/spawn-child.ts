/** Starts one bench epoch child (optionally under `strace -f -c`) and collects its result file. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, ShardkitError, type ErrorCode } from '../../formats/errors.js';
import { CHILD_READY_LINE, CHILD_START_LINE, type ChildResult, type EpochJob } from './child-protocol.js';
import { parseStraceSummary } from './strace.js';

/**
 * The compiled child script, next to this module. When this module runs from TypeScript sources (tests), the
 * child is taken from the build in dist/: a child must be plain JavaScript that Node runs by itself.
 */
export function epochChildScript(): string {
  const here = fileURLToPath(new URL('./epoch-child.js', import.meta.url));
  if (fs.existsSync(here)) return here;
  const built = here.replace(`${path.sep}src${path.sep}bench${path.sep}`, `${path.sep}dist${path.sep}src${path.sep}bench${path.sep}`);
  if (fs.existsSync(built)) return built;
  throw new ShardkitError(ErrorCodes.IO, `The bench child script ${here} is missing: build shardkit first (npm run build)`, { file: here });
}

export interface ChildRun {
  result: Extract<ChildResult, { ok: true }>;
  /** `strace -c` calls of the whole child, when traced. */
  straceCalls: Record<string, number> | null;
}

let jobCounter = 0;

export interface ChildRunOptions {
  /** Run under `strace -f -c`; `paths`: count only calls on these files (`strace -P`), or every call when null. */
  trace?: { paths: readonly string[] | null };
  onDone?: (samples: number) => void;
  /**
   * With `job.waitForStart`: called with the child's pid once it is set up and waiting; the child starts its
   * epochs when this returns. If it throws, the child is killed and the run rejects with that error.
   */
  beforeStart?: (pid: number) => void | Promise<void>;
}

/** Runs `job` in a fresh Node process; rejects with the child's ShardkitError when it failed. */
export async function runEpochChild(job: EpochJob, workDir: string, options: ChildRunOptions = {}): Promise<ChildRun> {
  const id = `${process.pid}-${++jobCounter}`;
  const jobFile = path.join(workDir, `job-${id}.json`);
  const resultFile = path.join(workDir, `result-${id}.json`);
  const straceFile = path.join(workDir, `strace-${id}.txt`);
  fs.writeFileSync(jobFile, JSON.stringify(job));
  const node = [process.execPath, epochChildScript(), jobFile, resultFile];
  const only = options.trace?.paths?.flatMap((p) => ['-P', p]) ?? [];
  const [cmd, ...args] = options.trace ? ['strace', '-f', '-c', ...only, '-o', straceFile, ...node] : node;
  // Under strace the pid would be strace's, not the reader's: a waiting child is never traced.
  if (job.waitForStart && options.trace) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'A bench child that waits for a start signal cannot run under strace');
  let startError: unknown;
  try {
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(cmd as string, args, { stdio: ['pipe', 'pipe', 'pipe'] });
      if (!job.waitForStart) child.stdin.end();
      let stderr = '';
      let pending = '';
      const start = async (): Promise<void> => {
        try {
          if (child.pid === undefined) throw new ShardkitError(ErrorCodes.IO, `bench ${job.side} child has no pid`);
          await options.beforeStart?.(child.pid);
          child.stdin.end(`${CHILD_START_LINE}\n`);
        } catch (err) {
          startError = err;
          child.kill('SIGKILL');
        }
      };
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        pending += d;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          if (line === CHILD_READY_LINE) {
            void start();
            continue;
          }
          try {
            const p = JSON.parse(line) as { done?: unknown };
            if (typeof p.done === 'number') options.onDone?.(p.done);
          } catch {
            // not a progress line
          }
        }
      });
      child.on('error', reject);
      child.stdin.on('error', () => undefined); // a child that died early closes the pipe: its exit says why
      child.on('close', (c) => resolve({ code: c, stderr }));
    });
    if (startError !== undefined) throw startError;
    let result: ChildResult;
    try {
      result = JSON.parse(fs.readFileSync(resultFile, 'utf8')) as ChildResult;
    } catch (err) {
      throw new ShardkitError(ErrorCodes.IO, `bench ${job.side} child exited with code ${code} without a result: ${stderr.trim().split('\n').slice(-3).join(' | ')}`, { cause: err });
    }
    if (!result.ok) throw new ShardkitError(result.code as ErrorCode, `bench ${job.side} side: ${result.message}`);
    const straceCalls = options.trace ? parseStraceSummary(fs.readFileSync(straceFile, 'utf8')) : null;
    return { result, straceCalls };
  } finally {
    for (const f of [jobFile, resultFile, straceFile]) fs.rmSync(f, { force: true });
  }
}
