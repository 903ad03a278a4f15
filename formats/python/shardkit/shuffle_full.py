"""Full shuffle: one Fisher–Yates pass over all N samples, seeded by (seed, epoch) (formats/SPEC.md "Shuffles")."""
from array import array
from typing import Sequence

from .fisher_yates import fisher_yates
from .prng import Seed, rng_for


def full_shuffle(shard_sizes: Sequence[int], seed: Seed, epoch: int, window_shards: int = 0) -> 'array[int]':
    """Every permutation equally likely; no locality (consecutive samples live in different shards).
    Best on local SSD and page cache; on HDD, network file systems and object storage prefer block.

    >>> list(full_shuffle([3, 0, 4, 2], 42, 1))
    [6, 2, 5, 1, 3, 4, 7, 0, 8]
    """
    order = list(range(sum(shard_sizes)))
    fisher_yates(order, 0, len(order), rng_for(seed, epoch, 'full'))
    return array('I', order)
