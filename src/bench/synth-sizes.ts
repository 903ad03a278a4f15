/**
 * The file-size mixes synth writes: a module of its own, so that `shardkit synth --help` (and `shardkit --help`,
 * which registers every command) can list them without loading the generator.
 */
export const SYNTH_SIZES = ['imagenet', 'tiny', 'mixed'] as const;
export type SynthSizes = (typeof SYNTH_SIZES)[number];
