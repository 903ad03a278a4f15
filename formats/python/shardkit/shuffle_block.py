"""Block shuffle: shards permuted, samples mixed inside windows of consecutive permuted shards
(formats/SPEC.md "Shuffles")."""
from array import array
from typing import List, Sequence

from .fisher_yates import fisher_yates
from .prng import Seed, rng_for

DEFAULT_WINDOW_SHARDS = 4


def block_shuffle(shard_sizes: Sequence[int], seed: Seed, epoch: int,
                  window_shards: int = DEFAULT_WINDOW_SHARDS) -> 'array[int]':
    """Reads stay within ``window_shards`` shards at a time: few open shards, nearby bytes read together, a
    shard can leave the cache once its window is done. The price is correlation: a window's samples are all
    seen before the next window starts. ``window_shards >= len(shard_sizes)`` mixes everything.

    >>> list(block_shuffle([3, 0, 4, 2], 42, 1, 2))
    [3, 8, 4, 6, 7, 5, 1, 0, 2]
    """
    first: List[int] = []
    position = 0
    for size in shard_sizes:
        first.append(position)
        position += size
    # Empty shards are left out, so every window holds real samples.
    shard_order = [s for s, size in enumerate(shard_sizes) if size > 0]
    fisher_yates(shard_order, 0, len(shard_order), rng_for(seed, epoch, 'block/shards'))
    order: List[int] = []
    sample_rng = rng_for(seed, epoch, 'block/samples')
    for w in range(0, len(shard_order), window_shards):
        window_start = len(order)
        for s in shard_order[w:w + window_shards]:
            order.extend(range(first[s], first[s] + shard_sizes[s]))
        fisher_yates(order, window_start, len(order), sample_rng)
    return array('I', order)
