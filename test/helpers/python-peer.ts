/**
 * A long-lived /usr/bin/python3 child that answers one JSON request per line (formats/python/tests/*_peer.py), so
 * property tests can compare each case with Python's answer without paying an interpreter start per case.
 * /usr/bin/python3 is named explicitly: the python3 first on PATH may be another interpreter without Debian's packages.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const PYTHON = '/usr/bin/python3';
export const PYTHON_PACKAGE_DIR = fileURLToPath(new URL('../../formats/python', import.meta.url));

export class PythonPeer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: Array<(line: string) => void> = [];
  private stderr = '';
  private exited = false;

  constructor(script: string) {
    this.child = spawn(PYTHON, [path.join(PYTHON_PACKAGE_DIR, 'tests', script)], { stdio: 'pipe' });
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.child.on('exit', () => {
      this.exited = true;
      for (const resolve of this.waiting.splice(0)) resolve(JSON.stringify({ error: 'PEER_EXITED', message: this.stderr }));
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.waiting.shift()?.(line));
  }

  /** Sends one request and resolves with the parsed reply (requests are answered in order). */
  ask<T = unknown>(request: unknown): Promise<T> {
    return new Promise<T>((resolve) => {
      if (this.exited) return resolve({ error: 'PEER_EXITED', message: this.stderr } as T);
      this.waiting.push((line) => resolve(JSON.parse(line) as T));
      this.child.stdin.write(`${JSON.stringify(request)}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }
}
