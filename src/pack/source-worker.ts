/**
 * Worker thread entry of {@link openSourceBatches}: produces the source batches and posts them with their buffers
 * transferred, at most `ahead` batches beyond what the main thread has taken.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { isShardkitError } from '../../formats/errors.js';
import { produceBatches, type CreditMessage, type SourceBatchOptions, type WorkerMessage } from './source-batches.js';
import type { WalkStats } from './walk.js';

const port = parentPort;
if (port === null) throw new Error('source-worker.js runs only as a worker thread');
const { options, ahead } = workerData as { options: SourceBatchOptions; ahead: number };

let credits = ahead;
let wake: (() => void) | undefined;
const spare: ArrayBuffer[] = [];
port.on('message', (m: CreditMessage) => {
  credits++;
  spare.push(...m.chunks);
  wake?.();
});
const post = (m: WorkerMessage, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);

try {
  let stats: WalkStats | undefined;
  for await (const batch of produceBatches(options, (s) => (stats = s), () => spare.pop())) {
    while (credits === 0) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
    credits--;
    post({ type: 'batch', batch }, [...batch.chunks, batch.meta.buffer as ArrayBuffer]);
  }
  post({ type: 'end', stats: stats as WalkStats });
} catch (err) {
  if (isShardkitError(err)) post({ type: 'error', code: err.code, message: err.message, ...(err.file === undefined ? {} : { file: err.file }), ...(err.key === undefined ? {} : { key: err.key }) });
  else post({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
}
port.unref();
