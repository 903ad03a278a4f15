/**
 * Reader thread of {@link openSourceBatches}: told how to encode (`init`), reads (and encodes) the tasks the walking
 * thread sends it, in order, and posts the batches back with their buffers transferred, at most `ahead` batches
 * beyond what that thread has taken.
 */
import { parentPort } from 'node:worker_threads';
import { useNativeCrc32c } from '../native/native.js';
import { toThreadError, type ReaderMessage, type WorkerMessage } from './reader-protocol.js';
import { readTimesMeasured, takeReadTimes } from './read-samples.js';
import { readTasks, type EncodeOptions, type SourceTask } from './source-batches.js';

const port = parentPort;
if (port === null) throw new Error('source-worker.js runs only as a worker thread');
useNativeCrc32c();

let init: { encode: EncodeOptions | undefined; verifySource: boolean } | undefined;
let credits = 0;
let ended = false;
const tasks: SourceTask[] = [];
const spare: ArrayBuffer[] = [];
let wake: (() => void) | undefined;
port.on('message', (m: ReaderMessage) => {
  if (m.type === 'init') {
    init = { encode: m.encode, verifySource: m.verifySource };
    credits = m.ahead;
  } else if (m.type === 'task') tasks.push(m.task);
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

/**
 * The thread's work, in a function rather than at the module's top level: a worker ended while a module with a
 * top-level await was still evaluating (a pack that stopped at once, with its readers just started) crashed Node 20
 * with "Check failed: (location_) != nullptr" and SIGTRAP (nodejs/node#43182): 2 of 1,200 such packs under load here,
 * none of 800 since.
 */
const serve = async (): Promise<void> => {
  try {
    while (init === undefined) await sleep();
    const measured = readTimesMeasured(init.encode);
    for await (const batch of readTasks(incoming(), init.encode, () => spare.pop(), init.verifySource)) {
      while (credits === 0) await sleep();
      credits--;
      post({ type: 'batch', batch, reading: takeReadTimes(measured) }, [...batch.chunks, batch.meta.buffer as ArrayBuffer]);
    }
  } catch (err) {
    post(toThreadError(err));
  }
  port.unref();
};

void serve();
