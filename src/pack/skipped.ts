/** The manifest's list of inputs left out, and the one order it is kept in. */
import { compareKeys } from '../../formats/key-order.js';
import { splitKey } from '../../formats/sample.js';

export interface SkippedInput {
  path: string;
  reason: string;
}

/**
 * Skipped inputs in the order a one-machine pack lists them: by the key of their path (the sort is stable). A pack
 * meets its samples in key order already; what the walk refused before any sample (a name that is not UTF-8) and
 * the lists of merged parts are sorted in.
 */
export function inKeyOrder(skipped: readonly SkippedInput[]): SkippedInput[] {
  return skipped
    .map((s) => ({ s, key: splitKey(s.path).key }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map((x) => x.s);
}
