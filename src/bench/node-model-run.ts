/** The bench's many-nodes section: {@link projectNodes} over the bench's own orders, for 1 to 1024 nodes. */
import { projectNodes } from '../cache/node-model.js';
import { planEpoch } from '../read/epoch-plan.js';
import { MODEL_NODES, type NodeModelSection } from './remote-section.js';

/** Above this many modelled reads (samples x node counts x epochs; ~20 s at 5M here), the model is left out of the report. */
export const MODEL_MAX_READS = 5_000_000;

export interface NodeModelRunInput {
  shardBytes: readonly number[];
  shardSamples: readonly number[];
  sampleBytes: readonly number[];
  order: 'random' | 'sequential';
  seed: number;
  cacheBytesPerNode: number;
  cacheSaid: string;
}

/** The section, or why it was left out. */
export function nodeModelSection(input: NodeModelRunInput): NodeModelSection | string {
  const samples = input.shardSamples.reduce((a, b) => a + b, 0);
  if (samples * MODEL_NODES.length * 2 > MODEL_MAX_READS) return `the many-nodes model was left out: ${samples} samples x ${MODEL_NODES.length} node counts x 2 epochs is more than ${MODEL_MAX_READS} modelled reads`;
  const shuffle = input.order === 'random' ? 'full' : 'none';
  const orders = [0, 1].map((epoch) => planEpoch({ shardSizes: input.shardSamples, seed: input.seed, epoch, shuffle }).order);
  const rows = MODEL_NODES.flatMap((nodes) =>
    projectNodes({ shardBytes: input.shardBytes, shardSamples: input.shardSamples, sampleBytes: input.sampleBytes, orders, nodes, cacheBytesPerNode: input.cacheBytesPerNode }).map((t) => ({
      nodes,
      strategy: t.strategy,
      first: t.epochs[0] as NonNullable<(typeof t.epochs)[0]>,
      later: t.epochs[1] as NonNullable<(typeof t.epochs)[1]>,
    })),
  );
  return {
    label: 'model',
    what:
      `A model of N nodes (one rank each, dealt the bench's ${shuffle} order for seed ${input.seed}, epochs 0 and 1) reading the dataset from one remote store; ${input.cacheSaid}. ` +
      'none: range reads of each sample (payload bytes; one request per run of adjacent samples). per-node-lru/min: each node caches whole shards it reads. ' +
      'placement: each shard held by the node that reads most of it, computed from the seed on every node (no metadata exchanged); other nodes read it from that node (peer bytes). Not measured.',
    cacheBytesPerNode: input.cacheBytesPerNode,
    datasetBytes: input.shardBytes.reduce((a, b) => a + b, 0),
    rows,
  };
}
