import type { Command } from 'commander';
import { synthDataset } from '../../src/on-demand.js';
import { SYNTH_SIZES } from '../../src/bench/synth-sizes.js';
import type { SynthProgress } from '../../src/bench/synth.js';
import { parseChoice, parseCount } from '../args.js';
import { humanBytes } from '../format.js';
import { printJson, runAction } from '../run-action.js';
import { loadCliProgress } from '../progress.js';

const DEFAULT_CLASSES = 10;

interface SynthFlags {
  samples: string;
  classes?: string;
  sizes: string;
  seed: string;
  json?: boolean;
  quiet?: boolean;
}

export function registerSynth(program: Command): void {
  program
    .command('synth')
    .description('write a synthetic Lots-Of-Small-Files dataset (ImageNet-like layout) for benchmarks')
    .argument('<dir>', 'output directory (new or empty)')
    .requiredOption('--samples <n>', 'number of samples')
    .option('--classes <k>', `number of class folders (default ${DEFAULT_CLASSES}, or the sample count when smaller)`)
    .option('--sizes <kind>', `file sizes: ${SYNTH_SIZES.join(' | ')}`, 'imagenet')
    .option('--seed <s>', 'seed: same seed, same bytes', '0')
    .option('--json', 'print the summary as JSON')
    .option('--quiet', 'print nothing on success')
    .action(
      runAction(async (dir: string, flags: SynthFlags) => {
        const samples = parseCount(flags.samples, '--samples', 1);
        // the default must not ask for more classes than samples: --samples 5 alone is a valid request
        const classes = flags.classes === undefined ? Math.min(DEFAULT_CLASSES, samples) : parseCount(flags.classes, '--classes', 1);
        const sizes = parseChoice(flags.sizes, '--sizes', SYNTH_SIZES);
        const seed = parseCount(flags.seed, '--seed', 0);
        const bar =
          process.stderr.isTTY && !flags.quiet && !flags.json
            ? new (loadCliProgress().SingleBar)({ stream: process.stderr, format: 'synth [{bar}] {value}/{total} samples {mib} MiB' }, loadCliProgress().Presets.shades_classic)
            : undefined;
        bar?.start(samples, 0, { mib: '0' });
        const onProgress = bar === undefined ? undefined : (p: SynthProgress): void => bar.update(p.samplesDone, { mib: (p.bytes / 2 ** 20).toFixed(0) });
        let summary;
        try {
          summary = await synthDataset({ dir, samples, classes, sizes, seed, ...(onProgress ? { onProgress } : {}) });
        } finally {
          bar?.stop();
        }
        if (flags.json) return printJson(summary);
        if (!flags.quiet) {
          process.stdout.write(
            `${summary.dir}: ${summary.samples} samples (${summary.sizes}, seed ${summary.seed}), ${summary.files} files, ` +
              `${humanBytes(summary.bytes)} in ${summary.classes} classes, ${summary.seconds.toFixed(1)} s\n`,
          );
        }
      }),
    );
}
