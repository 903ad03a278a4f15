/**
 * Exact key lookups inside a decoded leaf: an open-addressing hash table over the leaf's keys, in one Int32Array
 * of (hash, slot + 1) pairs at a load of at most one half, probed linearly. A lookup hashes the key, reads one
 * pair (one cache line, mostly) and compares the one key whose hash matches.
 *
 * It replaced a Map<string, number> per leaf: on random lookups interleaved with sample reads (20,000 samples of
 * 1-10 KiB), V8's Map lookup took ~0.3 us of a 2.9 us getSync (its bucket, its entry and the stored key are three
 * cache misses). The table takes 16-32 bytes a key, about what the Map took.
 */

/** Pairs per table: the first power of two at least twice the key count (a load of at most 1/2). */
function tablePairs(keys: number): number {
  let pairs = 2;
  while (pairs < keys * 2) pairs *= 2;
  return pairs;
}

/**
 * A 32-bit hash of the key's UTF-16 code units: FNV-1a, then a final avalanche so that keys differing only in
 * their last characters (`img-000123`, `img-000124`) spread over the table's low bits.
 */
export function hashKey(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The table of `keys`. Equal keys (only in a damaged index) keep the first one's slot, as a search would find. */
export function buildKeyTable(keys: readonly string[]): Int32Array {
  const table = new Int32Array(tablePairs(keys.length) * 2);
  const mask = table.length / 2 - 1;
  for (let slot = 0; slot < keys.length; slot++) {
    const key = keys[slot] as string;
    const h = hashKey(key);
    let j = h & mask;
    for (;;) {
      const at = table[2 * j + 1] as number;
      if (at === 0) break;
      if (table[2 * j] === h && keys[at - 1] === key) break; // a later duplicate: the first one stays
      j = (j + 1) & mask;
    }
    if (table[2 * j + 1] === 0) {
      table[2 * j] = h;
      table[2 * j + 1] = slot + 1;
    }
  }
  return table;
}

/** The slot of `key` in `keys` through their table, or -1 when the leaf does not hold it. */
export function findKey(table: Int32Array, keys: readonly string[], key: string): number {
  const h = hashKey(key);
  const mask = (table.length >> 1) - 1;
  for (let j = h & mask; ; j = (j + 1) & mask) {
    const at = table[2 * j + 1] as number;
    if (at === 0) return -1;
    if (table[2 * j] === h && keys[at - 1] === key) return at - 1;
  }
}
