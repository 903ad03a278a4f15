import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ARENA_MAX_READ_BYTES, ARENA_SLAB_BYTES, ReadArena } from '../../src/read/read-arena.js';

describe('ReadArena', () => {
  it('a fresh arena hands out an empty view, and then views of the asked length', () => {
    const arena = new ReadArena();
    expect(arena.take(0).length).toBe(0);
    const view = arena.take(100);
    expect(view.length).toBe(100);
    expect(view).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(view)).toBe(false);
  });

  it('views never overlap, start 8-byte aligned inside a slab, and large reads get a buffer of their own', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: ARENA_MAX_READ_BYTES + 1000 }), { minLength: 1, maxLength: 60 }), (lengths) => {
        const arena = new ReadArena();
        const views = lengths.map((n) => arena.take(n));
        views.forEach((v, i) => {
          expect(v.length).toBe(lengths[i]);
          if (v.length > ARENA_MAX_READ_BYTES) expect(v.buffer.byteLength).toBe(v.length);
          else if (v.length > 0) {
            expect(v.buffer.byteLength).toBe(ARENA_SLAB_BYTES);
            expect(v.byteOffset % 8).toBe(0);
          }
          v.fill(i & 255);
        });
        // every view still holds what was written into it: no two share a byte
        views.forEach((v, i) => expect(v.every((b) => b === (i & 255))).toBe(true));
      }),
      { numRuns: 200 },
    );
  });
});
