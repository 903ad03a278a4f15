"""The shuffle registry: one algorithm per module, each a pure function
``(shard_sizes, seed, epoch, window_shards) -> order`` (a permutation of 0..N-1, 4 bytes a sample).

Same arguments, same order as the Node loader's (src/read/shuffle/), on every machine.
"""
from typing import Callable, Dict, Sequence

from .prng import Seed
from .shuffle_block import DEFAULT_WINDOW_SHARDS, block_shuffle
from .shuffle_full import full_shuffle
from .shuffle_none import no_shuffle

ShuffleFn = Callable[[Sequence[int], Seed, int, int], 'array']

SHUFFLES: Dict[str, ShuffleFn] = {'none': no_shuffle, 'full': full_shuffle, 'block': block_shuffle}
"""Every algorithm by name, in a stable order (for help texts and tests)."""

SHUFFLE_NAMES = tuple(SHUFFLES)

__all__ = ['SHUFFLES', 'SHUFFLE_NAMES', 'DEFAULT_WINDOW_SHARDS', 'block_shuffle', 'full_shuffle', 'no_shuffle']
