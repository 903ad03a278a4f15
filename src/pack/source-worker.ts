/**
 * Reader thread of {@link openSourceBatches}: reads (and encodes) the tasks the walk thread sends it, in order, and
 * posts the batches to the main thread with their buffers transferred, at most `ahead` batches beyond what the main
 * thread has taken. The only reader walks the source itself and ends with the walk's counters.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { useNativeCrc32c } from '../native/native.js';
import { readTasks, sourceTasks, type EncodeOptions, type SourceBatchOptions, type SourceTask } from './source-batches.js';
import { toThreadError, type ReaderMessage, type WorkerMessage } from './source-threads.js';
import type { WalkStats } from './walk.js';

const port = parentPort;
if (port === null) throw new Error('source-worker.js runs only as a worker thread');
/** `tasks`: the walk thread's port; or `walk`: this thread walks the source itself (the only reader). */
const { encode, ahead, tasks: taskPort, walk } = workerData as { encode: EncodeOptions | undefined; ahead: number; tasks?: MessagePort; walk?: SourceBatchOptions };
useNativeCrc32c();

let credits = ahead;
let ended = false;
const tasks: SourceTask[] = [];
const spare: ArrayBuffer[] = [];
let wake: (() => void) | undefined;
const onMessage = (m: ReaderMessage): void => {
  if (m.type === 'task') tasks.push(m.task);
  else if (m.type === 'end') ended = true;
  else {
    credits++;
    spare.push(...m.chunks);
  }
  wake?.();
};
// tasks and their end come from the walk thread; credits from the main thread
port.on('message', onMessage);
taskPort?.on('message', onMessage);
const sleep = (): Promise<void> =>
  new Promise<void>((resolve) => {
    wake = resolve;
  });

async function* incoming(): AsyncGenerator<SourceTask> {
  for (;;) {
    const task = tasks.shift();
    if (task !== undefined) yield task;
    else if (ended) return;
    else await sleep();
  }
}

const post = (m: WorkerMessage, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);
try {
  let stats: WalkStats | undefined;
  const tasks = walk === undefined ? incoming() : sourceTasks(walk, (s) => (stats = s));
  for await (const batch of readTasks(tasks, encode, () => spare.pop())) {
    while (credits === 0) await sleep();
    credits--;
    post({ type: 'batch', batch }, [...batch.chunks, batch.meta.buffer as ArrayBuffer]);
  }
  if (stats !== undefined) post({ type: 'walked', stats });
} catch (err) {
  post(toThreadError(err));
}
port.unref();
taskPort?.close();
