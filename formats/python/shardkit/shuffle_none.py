"""No shuffle: key order, 0..N-1, every epoch (formats/SPEC.md "Shuffles")."""
from array import array
from typing import Sequence

from .prng import Seed


def no_shuffle(shard_sizes: Sequence[int], seed: Seed, epoch: int, window_shards: int = 0) -> 'array[int]':
    """Positions in key order. Perfect locality, no randomness: for evaluation, extraction, raw-speed benchmarks,
    or data shuffled when it was packed. ``seed``, ``epoch`` and ``window_shards`` are ignored.

    >>> list(no_shuffle([3, 2], 0, 0))
    [0, 1, 2, 3, 4]
    """
    return array('I', range(sum(shard_sizes)))
