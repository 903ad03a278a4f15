/**
 * Reader thread of {@link openSourceBatches}: reads (and encodes) the tasks the walk thread sends it, in order, and
 * posts the batches to the main thread with their buffers transferred, at most `ahead` batches beyond what the main
 * thread has taken.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { useNativeCrc32c } from '../native/native.js';
import { readTasks, type EncodeOptions, type SourceTask } from './source-batches.js';
import { toThreadError, type ReaderMessage, type WorkerMessage } from './source-threads.js';

const port = parentPort;
if (port === null) throw new Error('source-worker.js runs only as a worker thread');
const { encode, ahead, tasks: taskPort } = workerData as { encode: EncodeOptions | undefined; ahead: number; tasks: MessagePort };
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
taskPort.on('message', onMessage);
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
taskPort.close();
