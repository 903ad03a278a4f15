/**
 * Walk thread of {@link openSourceBatches}: walks the source, cuts the samples into tasks and sends task t to
 * reader thread t mod threads through its port, staying at most `tasksAhead` tasks per reader beyond the tasks
 * the main thread has written. Tells the main thread how many tasks are out, and the walk's counters at the end.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sourceTasks } from './source-batches.js';
import { toThreadError, type ReaderMessage, type WalkerData, type WalkerMessage, type WrittenMessage } from './source-threads.js';
import type { WalkStats } from './walk.js';

const port = parentPort;
if (port === null) throw new Error('walk-worker.js runs only as a worker thread');
const { options, threads, tasksAhead, ports } = workerData as WalkerData;

let written = 0;
let wake: (() => void) | undefined;
port.on('message', (m: WrittenMessage) => {
  written = m.tasks;
  wake?.();
});
const post = (m: WalkerMessage): void => port.postMessage(m);
const toReader = (task: number, m: ReaderMessage): void => (ports[task % threads] as (typeof ports)[number]).postMessage(m);

try {
  let stats: WalkStats | undefined;
  let tasks = 0;
  for await (const task of sourceTasks(options, (s) => (stats = s))) {
    while (task.task >= written + tasksAhead * threads) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
    toReader(task.task, { type: 'task', task });
    tasks = task.task + 1;
    post({ type: 'dispatched', tasks });
  }
  post({ type: 'end', tasks, stats: stats as WalkStats });
} catch (err) {
  post(toThreadError(err));
}
for (let i = 0; i < threads; i++) toReader(i, { type: 'end' });
port.unref();
