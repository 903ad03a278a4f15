/**
 * Reader thread of {@link openSourceBatches}: reads (and encodes) the tasks the walking thread sends it, in order, and
 * posts the batches back with their buffers transferred, at most `ahead` batches beyond what that thread has taken.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { useNativeCrc32c } from '../native/native.js';
import { readTasks, type SourceTask } from './source-batches.js';
import { toThreadError, type ReaderData, type ReaderMessage, type WorkerMessage } from './source-threads.js';

const port = parentPort;
if (port === null) throw new Error('source-worker.js runs only as a worker thread');
const { encode, ahead } = workerData as ReaderData;
useNativeCrc32c();

let credits = ahead;
let ended = false;
const tasks: SourceTask[] = [];
const spare: ArrayBuffer[] = [];
let wake: (() => void) | undefined;
port.on('message', (m: ReaderMessage) => {
  if (m.type === 'task') tasks.push(m.task);
  else if (m.type === 'end') ended = true;
  else {
    credits++;
    spare.push(...m.chunks);
  }
  wake?.();
});
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
  for await (const batch of readTasks(incoming(), encode, () => spare.pop())) {
    while (credits === 0) await sleep();
    credits--;
    post({ type: 'batch', batch }, [...batch.chunks, batch.meta.buffer as ArrayBuffer]);
  }
} catch (err) {
  post(toThreadError(err));
}
port.unref();
