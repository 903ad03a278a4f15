/**
 * Imported by main.ts before anything else: for `shardkit pack`, starts the reader threads while the command's
 * modules load (~0.1 s each way here), instead of after. (In the bundle, main.ts's other static imports, commander
 * among them, load first: ~40 ms. An entry that loaded them after starting the threads measured no faster.) The
 * pack takes the threads over; when it does not get that far (bad arguments, --help), they end with the process.
 */
import { initialReadThreads, prestartReaders } from '../src/pack/reader-start.js';

/** The readers `shardkit pack` will want, from its arguments; undefined for another command or a value to refuse. */
export function readersWanted(args: readonly string[]): number | undefined {
  if (args.find((a) => !a.startsWith('-')) !== 'pack') return undefined;
  // null: no --read-threads; undefined: the flag without a value
  let value: string | undefined | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--read-threads') value = args[i + 1];
    else if (a.startsWith('--read-threads=')) value = a.slice('--read-threads='.length);
  }
  if (value === null) return initialReadThreads();
  if (value === undefined) return undefined;
  // what commander and the pack will check; a value they refuse starts nothing
  return /^\d{1,2}$/.test(value) ? Number(value) : undefined;
}

prestartReaders(readersWanted(process.argv.slice(2)) ?? 0);
