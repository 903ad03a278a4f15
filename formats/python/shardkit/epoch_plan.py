"""One rank's share of one epoch, exactly as the Node loader reads it (formats/SPEC.md "Epoch plan"; mirrors
src/read/epoch-plan.ts and the loader's batching).

The epoch's order is a shuffle of the positions and never depends on the number of ranks. What is left of it
(everything, or what a resume state says was not read) is dealt to the ranks like cards: rank r takes remaining
indices r, r+W, r+2W, ... A checkpoint where every rank yielded k samples is "the first k*W remaining indices",
so a job can resume on another number of ranks, in either language.

>>> plan = EpochPlan([3, 0, 4, 2], seed=42, epoch=1, shuffle='full', rank=0, world_size=2, batch_size=2)
>>> list(plan.batches())
[[6, 5], [3, 7], [8]]
"""
from bisect import bisect_right
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .epoch_state import (BAD_STATE, EPOCH_STATE_VERSION, MAX_SAMPLES, Cursor, bad_state, expect_cursor,
                          expect_identity_shape, expect_rank_state_shape, expect_same_identity, order_identity)
from .errors import INVALID_ARG, OUT_OF_RANGE, TOO_LARGE, ShardkitError, ShardkitIndexError
from .js_values import MAX_SAFE_INTEGER, as_int, received
from .loader_state import DatasetIdentity, expect_loader_state, loader_state, merge_loader_states
from .prng import Seed
from .shuffle import DEFAULT_WINDOW_SHARDS, SHUFFLE_NAMES, SHUFFLES

MAX_INT32 = 2 ** 31 - 1
PARTITIONS = ('pad', 'drop')

__all__ = ['EpochPlan', 'merge_states', 'merge_rank_states', 'merge_loader_states', 'rank_counts', 'BAD_STATE']


def _invalid(expected: str, name: str, value: Any) -> ShardkitError:
    return ShardkitError(INVALID_ARG, f'Expected {expected} for {name} but received {received(value)}')


def _expect_int(value: Any, low: int, high: int, name: str) -> int:
    number = as_int(value)
    if number is None or not low <= number <= high:
        raise _invalid(f'integer between {low} and {high}', name, value)
    return number


def _expect_seed(seed: Any) -> Seed:
    if isinstance(seed, str):
        return seed
    number = as_int(seed)
    if number is None or abs(number) > MAX_SAFE_INTEGER:
        raise _invalid('safe integer or string', 'seed', seed)
    return number


def _expect_shard_sizes(shard_sizes: Any) -> List[int]:
    if isinstance(shard_sizes, (str, bytes, dict)) or not hasattr(shard_sizes, '__len__'):
        raise _invalid('sequence of non-negative integers', 'shard_sizes', shard_sizes)
    sizes: List[int] = []
    for s, raw in enumerate(shard_sizes):
        size = as_int(raw)
        if size is None or not 0 <= size <= MAX_SAFE_INTEGER:
            raise _invalid('non-negative integer', f'shard_sizes[{s}]', raw)
        sizes.append(size)
    total = sum(sizes)
    if total > MAX_SAMPLES:
        raise ShardkitError(TOO_LARGE, f'Expected at most {MAX_SAMPLES} samples in total for shard_sizes but '
                                       f'received {total}: an order holds one 32-bit position per sample; split the dataset')
    return sizes


def rank_counts(remaining: int, world_size: int, partition: str, batch_size: int = 1,
                drop_last: bool = False) -> Dict[str, int]:
    """Per-rank counts for ``remaining`` samples: ``per_rank`` dealt, ``length`` yielded, ``batches``, and the
    ``padding`` repeats added over all ranks ('pad' only, < world_size)."""
    per_rank = -(-remaining // world_size) if partition == 'pad' else remaining // world_size
    batches = per_rank // batch_size if drop_last else -(-per_rank // batch_size)
    return {
        'per_rank': per_rank,
        'length': batches * batch_size if drop_last else per_rank,
        'batches': batches,
        'padding': per_rank * world_size - remaining if partition == 'pad' else 0,
    }


class _RemainingToOrderIndex:
    """Maps "the q-th order index not yet yielded" to the order index, for a cursor (a class, not a closure,
    so a plan pickles for spawned DataLoader workers)."""

    __slots__ = ('consumed', 'before')

    def __init__(self, cursor: Cursor):
        consumed, skip = cursor
        self.consumed = consumed
        # skip[t] - consumed - t: how many unyielded indices precede skip[t]; never decreases.
        self.before = [index - consumed - t for t, index in enumerate(skip)]

    def __call__(self, q: int) -> int:
        return self.consumed + q + (bisect_right(self.before, q) if self.before else 0)

    def __getstate__(self):
        return self.consumed, self.before

    def __setstate__(self, state):
        self.consumed, self.before = state


def _remaining_to_order_index(cursor: Cursor) -> Callable[[int], int]:
    return _RemainingToOrderIndex(cursor)


def merge_rank_states(states: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Merges the rank states of all W ranks of one job (any order, each once) into the job's epoch state
    (Node's ``mergeRankStates``). Ranks that stopped at different counts lose and repeat nothing: indices
    that faster ranks read past the first unread one are listed in ``skip``. BAD_STATE on missing, duplicated
    or foreign states."""
    if not isinstance(states, (list, tuple)) or len(states) == 0:
        raise bad_state('mergeRankStates needs the states of all ranks but received none')
    first = expect_rank_state_shape(states[0], 'states[0]')
    # Version first, so a state from a newer shardkit says so rather than failing on a renamed field.
    expect_same_identity(first, first, 'states[0]')
    expect_identity_shape(first, 'states[0]')
    identity = first
    samples = as_int(identity['samples'])
    world_size = as_int(first['worldSize'])
    start = expect_cursor(first.get('start'), samples, 'states[0].start')
    if len(states) != world_size:
        raise bad_state(f'mergeRankStates needs all {world_size} rank states but received {len(states)}')
    remaining = samples - start[0] - len(start[1])
    most_per_rank = -(-remaining // world_size)
    yielded_by_rank = [-1] * world_size
    for i, raw in enumerate(states):
        state = expect_rank_state_shape(raw, f'states[{i}]')
        expect_same_identity(state, identity, f'states[{i}]')
        if as_int(state['worldSize']) != world_size:
            raise bad_state(f"states[{i}] has worldSize {state['worldSize']} but states[0] has {world_size}")
        # compared by value, as Node does: a state file rewritten with its keys in another order is the same state
        if expect_cursor(state.get('start'), samples, f'states[{i}].start') != start:
            raise bad_state(f'states[{i}] started from another cursor than states[0]: they are not from one plan')
        length = as_int(state['length'])
        if length > most_per_rank:
            raise bad_state(f'states[{i}].length is {length}, but a rank of {world_size} is dealt at most '
                            f'{most_per_rank} of the {remaining} samples its plan started with')
        rank = as_int(state['rank'])
        if yielded_by_rank[rank] != -1:
            raise bad_state(f'mergeRankStates received rank {rank} twice')
        yielded_by_rank[rank] = as_int(state['yielded'])

    to_order_index = _remaining_to_order_index(start)
    # First remaining index (in deal order) that no rank yielded.
    first_unyielded = min(r + k * world_size for r, k in enumerate(yielded_by_rank))
    consumed = to_order_index(first_unyielded) if first_unyielded < remaining else samples
    skip = [index for index in start[1] if index >= consumed]
    for r, k in enumerate(yielded_by_rank):
        # Rank r yielded remaining indices r + i*W for i < k; those past first_unyielded are ahead of the cursor.
        first_ahead = max(0, -(-(first_unyielded + 1 - r) // world_size))
        for i in range(first_ahead, k):
            q = r + i * world_size
            if q >= remaining:
                break  # padding
            skip.append(to_order_index(q))
    skip.sort()
    return {
        'version': EPOCH_STATE_VERSION,
        'seed': identity['seed'],
        'epoch': identity['epoch'],
        'shuffle': identity['shuffle'],
        'shuffleOptions': dict(identity['shuffleOptions']),
        'samples': samples,
        'shards': identity['shards'],
        'shardSizesHash': identity['shardSizesHash'],
        'kind': 'epoch',
        'consumed': consumed,
        'skip': skip,
    }


def merge_states(states: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Merges all ranks' states of one job: loader states (``plan.state(k)``, Node's ``loader.state()``) into a
    loader state, or bare rank states (``plan.progress(k)``, Node's ``plan.state(k)``) into an epoch state. The
    result resumes the epoch on any number of ranks, in Python or Node.

    >>> merged = merge_states([plan.state(k) for plan, k in zip(plans, yielded)])  # doctest: +SKIP
    """
    if isinstance(states, (list, tuple)) and states and isinstance(states[0], dict) and 'format' in states[0]:
        return merge_loader_states(states)
    return merge_rank_states(states)


class EpochPlan:
    """One rank's samples for one epoch, in the Node loader's order and batches.

    ``source`` is a Dataset (its ``shard_sizes`` and ``identity`` are used) or a sequence of shard sizes. Options
    as the Node loader's (``batchSize`` is ``batch_size`` and so on); ``resume_from`` takes a state from
    :meth:`state` or Node's ``loader.state()`` (merged with :func:`merge_states` when the job had several
    ranks), or with bare shard sizes and no ``dataset_identity``, a progress state (:meth:`progress`, Node's
    ``planEpoch(...).state(k)``, or an epoch state). The order is computed once, in O(N) time (pure Python:
    seconds for a million samples) and 4 bytes a sample.

    >>> plan = EpochPlan([3, 0, 4, 2], seed=42, epoch=1, shuffle='full', rank=1, world_size=2, batch_size=2)
    >>> list(plan), len(plan), plan.num_batches
    ([2, 1, 4, 0, 6], 5, 3)
    >>> plan.progress(4)['yielded']
    4
    """

    def __init__(self, source: Union[Sequence[int], Any], *, seed: Seed = 0, epoch: int = 0, shuffle: str = 'none',
                 window_shards: Optional[int] = None, rank: int = 0, world_size: int = 1, partition: str = 'pad',
                 batch_size: int = 1, drop_last: bool = False, resume_from: Optional[Dict[str, Any]] = None,
                 dataset_identity: Optional[DatasetIdentity] = None):
        if hasattr(source, 'shard_sizes') and hasattr(source, 'identity'):
            shard_sizes = source.shard_sizes
            dataset_identity = dict(source.identity) if dataset_identity is None else dataset_identity
        else:
            shard_sizes = source
        sizes = _expect_shard_sizes(shard_sizes)
        if shuffle not in SHUFFLE_NAMES:
            raise _invalid(f"one of {', '.join(SHUFFLE_NAMES)}", 'shuffle', shuffle)
        if window_shards is not None and shuffle != 'block':
            raise ShardkitError(INVALID_ARG, f'window_shards applies to shuffle "block" only but shuffle is "{shuffle}"')
        options: Dict[str, int] = {}
        if shuffle == 'block':
            options['windowShards'] = _expect_int(DEFAULT_WINDOW_SHARDS if window_shards is None else window_shards,
                                                  1, MAX_SAMPLES, 'window_shards')
        self.identity = order_identity(_expect_seed(seed), _expect_int(epoch, 0, MAX_SAFE_INTEGER, 'epoch'),
                                       shuffle, options, sizes)
        """The order's identity (version, seed, epoch, shuffle, shuffleOptions, samples, shards, shardSizesHash)."""
        self.world_size = _expect_int(world_size, 1, MAX_INT32, 'world_size')
        self.rank = _expect_int(rank, 0, self.world_size - 1, 'rank')
        if partition not in PARTITIONS:
            raise _invalid('one of pad, drop', 'partition', partition)
        self.partition = partition
        self.batch_size = _expect_int(batch_size, 1, MAX_INT32, 'batch_size')
        if not isinstance(drop_last, bool):
            raise _invalid('boolean', 'drop_last', drop_last)
        self.drop_last = drop_last
        self.dataset_identity = dataset_identity
        self.shard_sizes = sizes
        self.epoch = self.identity['epoch']
        self.seed = self.identity['seed']
        self.shuffle = shuffle
        self.start: Cursor
        self.offset: int
        """This rank's dealt samples already yielded before this plan: a rank state's ``yielded`` when resuming it."""
        self.start, self.offset = self._resolve_start(resume_from)

        self.samples_total = self.identity['samples']
        self.order = SHUFFLES[shuffle](sizes, self.seed, self.epoch, options.get('windowShards', 0))
        """The epoch's order (same on every rank and world size): an array('I') of positions. Do not modify."""
        self.remaining = self.samples_total - self.start[0] - len(self.start[1])
        """Order indices no rank had read when this plan started."""
        counts = rank_counts(self.remaining, self.world_size, partition, self.batch_size, drop_last)
        self._dealt: int = counts['length']
        self.length: int = counts['length'] - self.offset
        """Samples this rank yields: its share from the resume point, after partition and drop_last."""
        self.num_batches: int = -(-self.length // self.batch_size)
        self.padding: int = counts['padding']
        """Repeats added over all ranks by 'pad'."""
        self._to_order_index = _remaining_to_order_index(self.start)

    def _length_from(self, cursor: Cursor) -> int:
        remaining = self.identity['samples'] - cursor[0] - len(cursor[1])
        return rank_counts(remaining, self.world_size, self.partition, self.batch_size, self.drop_last)['length']

    def _resolve_start(self, resume_from: Any) -> Tuple[Cursor, int]:
        """The cursor the deal starts from, and how many of this rank's dealt samples were already yielded (nonzero
        only when a rank resumes from its own state: same rank and world size, as in Node's resolveStart)."""
        if resume_from is None:
            return (0, []), 0
        if self.dataset_identity is not None:
            resume_from = expect_loader_state(resume_from, self.dataset_identity)
        if not isinstance(resume_from, dict):
            raise bad_state(f'Expected a loader state object for resumeFrom but received {resume_from!r}')
        kind = resume_from.get('kind')
        if kind == 'rank':
            own = expect_rank_state_shape(resume_from, 'resumeFrom')
            if own['rank'] == self.rank and own['worldSize'] == self.world_size:
                expect_same_identity(resume_from, self.identity, 'resumeFrom')
                cursor = expect_cursor(own['start'], self.identity['samples'], 'resumeFrom.start')
                length = self._length_from(cursor)
                if length == own['length']:
                    return cursor, own['yielded']
                # one rank alone may change its batching: merged below, its remaining samples are dealt afresh
                if self.world_size != 1:
                    raise bad_state(f"resumeFrom gave rank {self.rank} of {self.world_size} {own['length']} samples but "
                                    f'this loader gives it {length}: resume with the same partition, batch_size and '
                                    'drop_last, or merge the states of all ranks with merge_states()')
            elif own['worldSize'] != 1:
                mine = f'this loader is rank {self.rank} of {self.world_size}'
                advice = ('give each rank its own state, or merge the states of all ranks with merge_states() and '
                          'resume every rank from the result') if own['worldSize'] == self.world_size else (
                          f"to change the world size, merge the states of all {own['worldSize']} ranks with "
                          'merge_states() and resume every rank from the result')
                raise bad_state(f"resumeFrom is the state of rank {own['rank']} of {own['worldSize']}, but {mine}: {advice}")
            merged = merge_rank_states([resume_from])
            expect_same_identity(merged, self.identity, 'resumeFrom')
            return (merged['consumed'], merged['skip']), 0
        if kind != 'epoch':
            raise bad_state(f'resumeFrom.kind must be "epoch" or "rank" but is {kind!r}')
        expect_same_identity(resume_from, self.identity, 'resumeFrom')
        return expect_cursor(resume_from, self.identity['samples'], 'resumeFrom'), 0

    def __len__(self) -> int:
        return self.length

    def at(self, i: int) -> int:
        """The position (what ``ds[i]`` takes) of this rank's i-th sample, 0 <= i < len(plan)."""
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < self.length:
            raise ShardkitIndexError(OUT_OF_RANGE, f'Expected integer between 0 and {self.length - 1} for sample '
                                                   f'index but received {i!r}')
        q = self.rank + (self.offset + i) * self.world_size
        # Past the remaining indices: padding, which repeats the order from its start.
        index = self._to_order_index(q) if q < self.remaining else (q - self.remaining) % self.samples_total
        return self.order[index]

    __getitem__ = at

    def samples(self, start: int = 0) -> Iterator[int]:
        """This rank's positions from its ``start``-th sample to the end."""
        _expect_int(start, 0, self.length, 'start')
        return self._samples(start)

    def _samples(self, start: int) -> Iterator[int]:
        # at(i) inlined: a sampler hands out every position of the epoch from here
        order, world, remaining, total = self.order, self.world_size, self.remaining, self.samples_total
        to_order_index = self._to_order_index
        consumed = self.start[0] if not self.start[1] else None  # no skip list: the q-th remaining is consumed + q
        q = self.rank + (self.offset + start) * world
        for _ in range(start, self.length):
            if q >= remaining:
                yield order[(q - remaining) % total]  # padding
            else:
                yield order[consumed + q if consumed is not None else to_order_index(q)]
            q += world

    __iter__ = samples

    def batch(self, b: int) -> List[int]:
        """Positions of batch ``b`` (0 <= b < num_batches); only the last may be short, and only without drop_last."""
        _expect_int(b, 0, self.num_batches - 1, 'batch')
        first = b * self.batch_size
        return [self.at(i) for i in range(first, min(first + self.batch_size, self.length))]

    def batches(self, start: int = 0) -> Iterator[List[int]]:
        """Batches of positions from batch ``start`` on, as the Node loader yields them."""
        _expect_int(start, 0, self.num_batches, 'start')
        return (self.batch(b) for b in range(start, self.num_batches))

    def progress(self, yielded: int) -> Dict[str, Any]:
        """This rank's rank state after it yielded its first ``yielded`` samples (Node's ``plan.state(k)``)."""
        _expect_int(yielded, 0, self.length, 'yielded')
        state = dict(self.identity)
        state['shuffleOptions'] = dict(self.identity['shuffleOptions'])
        state.update({
            'kind': 'rank',
            'rank': self.rank,
            'worldSize': self.world_size,
            'start': {'consumed': self.start[0], 'skip': list(self.start[1])},
            'length': self._dealt,
            # counted from the start of the rank's deal, so the state merges with the other ranks' states
            'yielded': self.offset + yielded,
        })
        return state

    def state(self, yielded: int) -> Dict[str, Any]:
        """The loader state after this rank yielded its first ``yielded`` samples: the JSON Node's
        ``loader.state()`` gives at that point. Needs the dataset's identity (a Dataset source, or
        ``dataset_identity``)."""
        if self.dataset_identity is None:
            raise ShardkitError(INVALID_ARG, 'state() needs the dataset identity: plan over a Dataset or pass '
                                             "dataset_identity={'index': ..., 'samples': ...}; progress() gives the bare rank state")
        return loader_state(self.dataset_identity, self.progress(yielded))

    def __repr__(self) -> str:
        return (f'EpochPlan(epoch={self.epoch}, shuffle={self.shuffle!r}, rank={self.rank}, '
                f'world_size={self.world_size}, length={self.length}, batches={self.num_batches})')
