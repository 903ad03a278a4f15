/**
 * A --pass-module for the e2e test of the bin's thread pool: counts the threads of libuv's pool in the process that
 * loaded it, and writes the count into each sample as member `pool`.
 *
 * The count is the pool itself, not UV_THREADPOOL_SIZE: an fs.open of a FIFO for reading holds one pool thread until a
 * writer opens the FIFO, so with more opens queued than the pool has threads, the threads waiting in the kernel's
 * FIFO open (wchan `wait_for_partner`) are the pool's threads. Non-blocking writer opens then let every reader go.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const QUEUED_OPENS = 64; // more than any pool these tests make

async function countPoolThreads() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-uv-pool-'));
  const fifos = Array.from({ length: QUEUED_OPENS }, (_, i) => path.join(dir, `f${i}`));
  execFileSync('mkfifo', fifos);
  let waiting = fifos.length;
  const readers = fifos.map((f) => fs.promises.open(f, 'r').then((h) => { waiting--; return h.close(); }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const inFifoOpen = fs.readdirSync('/proc/self/task').filter((t) => {
    try {
      return fs.readFileSync(`/proc/self/task/${t}/wchan`, 'utf8') === 'wait_for_partner';
    } catch {
      return false; // the thread ended
    }
  }).length;
  while (waiting > 0) {
    for (const f of fifos) {
      try {
        fs.closeSync(fs.openSync(f, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
      } catch {
        // ENXIO: no reader waits on this FIFO yet (its open is still queued) or any more
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(readers);
  fs.rmSync(dir, { recursive: true });
  return inFifoOpen;
}

const pool = new TextEncoder().encode(String(await countPoolThreads()));

export default (sample) => ({ ...sample, members: { ...sample.members, pool } });
