"""Mixtures and rehearsal: one epoch over several datasets, in the Node loader's order (formats/SPEC.md "Mixture
and rehearsal epochs"; mirrors src/read/mixture-counts.ts, mixture-plan.ts and rehearsal-plan.ts).

An epoch of a mixture is a table of (source, position) pairs, a pure function of the sources' sizes and counts,
the seed and the epoch. The table is then dealt to ranks and batched like a dataset read in key order (an
:class:`EpochPlan` with ``shuffle='none'`` over one shard of the table's length), so resume states and merges are
those of the epoch plan.

>>> counts = mixture_counts([{'size': 4, 'weight': 3}, {'size': 2, 'weight': 1}], epoch_samples=9)
>>> counts
[7, 2]
>>> list(MixturePlan([4, 2], counts, seed=42, epoch=1, batch_size=4).batches())
[[(0, 0), (0, 3), (0, 1), (1, 0)], [(0, 2), (0, 1), (1, 1), (0, 0)], [(0, 2)]]
>>> list(MixturePlan([5, 3], seed=42, epoch=1, rank=1, world_size=2, batch_size=4, rehearsal_ratio=0.25).batches())
[[(0, 2), (0, 1), (0, 4), (1, 0)]]
"""
import math
from array import array
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .epoch_plan import EpochPlan
from .errors import INVALID_ARG, ShardkitError
from .fisher_yates import fisher_yates
from .js_values import as_int, js_json
from .prng import Seed, rng_for

MAX_EPOCH = 2 ** 32 - 1

__all__ = ['MixturePlan', 'mixture_counts', 'plan_mixture_epoch', 'rehearsal_shape', 'plan_rehearsal_epoch']


def _invalid(message: str) -> ShardkitError:
    return ShardkitError(INVALID_ARG, message)


def _is_weight(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def mixture_counts(sources: Sequence[Dict[str, Any]], epoch_samples: Optional[int] = None) -> List[int]:
    """Samples each source gives per epoch. A source is ``{'size': n, 'samples': c}`` (exactly c) or
    ``{'size': n, 'weight': w}`` (a share of ``epoch_samples``, by default the weighted sources' sizes summed,
    split by the largest-remainder method, ties to the earlier source).

    >>> mixture_counts([{'size': 10, 'weight': 1}, {'size': 10, 'weight': 2}, {'size': 3, 'samples': 5}])
    [7, 13, 5]
    """
    if len(sources) == 0:
        raise _invalid('a mixture needs at least one source')
    for i, s in enumerate(sources):
        if ('weight' in s) + ('samples' in s) != 1:
            raise _invalid(f'source {i} needs exactly one of weight and samples')
        if 'weight' in s and not _is_weight(s['weight']):
            raise _invalid(f"Expected a finite number above 0 for sources[{i}].weight but received {js_json(s['weight'])}; "
                           'leave a source out rather than weigh it 0')
        if 'samples' in s and not (as_int(s['samples']) is not None and 0 <= s['samples'] <= 2 ** 53 - 1):
            raise _invalid(f"Expected a whole number of at least 0 for sources[{i}].samples but received {js_json(s['samples'])}")
    weighted = [i for i, s in enumerate(sources) if 'weight' in s]
    if epoch_samples is not None and not (as_int(epoch_samples) is not None and 0 <= epoch_samples <= 2 ** 53 - 1):
        raise _invalid(f'Expected a whole number of at least 0 for epochSamples but received {js_json(epoch_samples)}')
    if epoch_samples is not None and not weighted:
        raise _invalid('epochSamples applies to weighted sources, and no source has a weight')
    counts = [int(s.get('samples', 0)) for s in sources]
    total = int(epoch_samples) if epoch_samples is not None else sum(int(sources[i]['size']) for i in weighted)
    weight_sum = 0.0
    for i in weighted:
        weight_sum += sources[i]['weight']  # summed left to right, as JavaScript's reduce
    exact = [(total * sources[i]['weight']) / weight_sum for i in weighted]
    given = 0
    for k, i in enumerate(weighted):
        counts[i] = math.floor(exact[k])
        given += counts[i]
    # the samples the floors left over go to the largest remainders (the earlier source on a tie)
    by_remainder = sorted(range(len(weighted)), key=lambda k: (-(exact[k] - math.floor(exact[k])), k))
    for r in range(total - given):
        counts[weighted[by_remainder[r % len(by_remainder)]]] += 1
    for i, c in enumerate(counts):
        if c > 0 and int(sources[i]['size']) == 0:
            raise _invalid(f'source {i} is an empty dataset, yet {c} of its samples are asked for per epoch')
    if sum(counts) > MAX_EPOCH:
        raise _invalid(f'a mixture epoch of {sum(counts)} samples is more than {MAX_EPOCH}; ask for fewer')
    return counts


def choose_from_source(size: int, count: int, seed: Seed, epoch: int, i: int) -> 'array[int]':
    """The positions source ``i`` gives this epoch: ``count // size`` whole passes in key order, then the first
    ``count % size`` slots of a seeded partial Fisher–Yates (salt ``mixture-source-<i>``): no repeats within it."""
    out = array('I')
    if count == 0:
        return out
    passes = count // size
    for _ in range(passes):
        out.extend(range(size))
    rest = count - passes * size
    if rest == 0:
        return out
    rng = rng_for(seed, epoch, f'mixture-source-{i}')
    order = list(range(size))
    for k in range(rest):
        j = k + rng.next_below(size - k)
        order[k], order[j] = order[j], order[k]
        out.append(order[k])
    return out


def plan_mixture_epoch(sizes: Sequence[int], counts: Sequence[int], seed: Seed,
                       epoch: int) -> Tuple['array[int]', 'array[int]']:
    """The epoch's table: each source's chosen positions, concatenated in source order, then put in one seeded
    order (a Fisher–Yates over the table, salt ``mixture``). Returns (source, position) arrays."""
    source = array('I')
    position = array('I')
    for i, count in enumerate(counts):
        source.extend([i] * count)
        position.extend(choose_from_source(sizes[i], count, seed, epoch, i))
    order = list(range(len(source)))
    fisher_yates(order, 0, len(order), rng_for(seed, epoch, 'mixture'))
    return array('I', (source[k] for k in order)), array('I', (position[k] for k in order))


def rehearsal_shape(task_size: int, exemplar_size: int, ratio: float, batch_size: int,
                    world_size: int) -> Dict[str, int]:
    """A rehearsal epoch's batch composition: ``exemplars = round(ratio * batch_size)`` (half away from zero, as
    JavaScript's Math.round for positive numbers), ``task`` the rest, and ``steps`` (batches per rank)."""
    if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 <= ratio < 1):
        raise _invalid(f'Expected a number in [0, 1) for rehearsal.ratio (the share of exemplars in each batch) '
                       f'but received {js_json(ratio)}')
    product = ratio * batch_size
    exemplars = math.floor(product)
    if product - exemplars >= 0.5:
        exemplars += 1
    task = batch_size - exemplars
    if task < 1:
        raise _invalid(f'a batch of {batch_size} at rehearsal ratio {js_json(ratio)} holds no task sample; use a larger batchSize')
    if exemplars > 0 and exemplar_size == 0:
        raise _invalid(f'the exemplar dataset is empty, yet rehearsal ratio {js_json(ratio)} asks for {exemplars} per batch; '
                       'use ratio 0 for the first task')
    return {'exemplars': exemplars, 'task': task, 'steps': -(-task_size // (world_size * task))}


def plan_rehearsal_epoch(sizes: Sequence[int], shape: Dict[str, int], world_size: int, seed: Seed,
                         epoch: int) -> Tuple['array[int]', 'array[int]']:
    """The table of a rehearsal epoch (source 0: the task, 1: the exemplars), laid out for the deal: entry q is an
    exemplar when ``(q // world_size) % batch_size >= task``. Task samples in a seeded order (salt
    ``rehearsal-task``), the first ones again to fill the last step; exemplars chosen as a mixture source 1 and put
    in a seeded order (salt ``rehearsal-exemplars``)."""
    task_size, exemplar_size = sizes
    batch_size = shape['task'] + shape['exemplars']
    total = shape['steps'] * world_size * batch_size
    task_order = list(range(task_size))
    fisher_yates(task_order, 0, task_size, rng_for(seed, epoch, 'rehearsal-task'))
    exemplars = choose_from_source(exemplar_size, shape['steps'] * world_size * shape['exemplars'], seed, epoch, 1)
    fisher_yates(exemplars, 0, len(exemplars), rng_for(seed, epoch, 'rehearsal-exemplars'))
    source = array('I', bytes(4 * total))
    position = array('I', bytes(4 * total))
    t = x = 0
    for q in range(total):
        if (q // world_size) % batch_size >= shape['task']:
            source[q] = 1
            position[q] = exemplars[x]
            x += 1
        else:
            position[q] = task_order[t % task_size]
            t += 1
    return source, position


class MixturePlan:
    """One rank's share of one mixture (or rehearsal) epoch, as Node's ``openMixture(...).loader(...)`` and
    ``openRehearsal(...).loader(...)`` read it: batches of (source, position) pairs.

    ``sizes`` are the sources' sample counts, ``counts`` what each gives per epoch (:func:`mixture_counts`). With
    ``rehearsal_ratio`` the sources are (task, exemplars) and the counts are derived from the ratio. Other
    options are :class:`EpochPlan`'s; ``resume_from`` takes the ``progress`` of a Node mixture state (or a
    :meth:`progress` of this plan).
    """

    def __init__(self, sizes: Sequence[int], counts: Optional[Sequence[int]] = None, *, seed: Seed = 0,
                 epoch: int = 0, rank: int = 0, world_size: int = 1, batch_size: int = 1, partition: str = 'pad',
                 drop_last: bool = False, rehearsal_ratio: Optional[float] = None,
                 resume_from: Optional[Dict[str, Any]] = None):
        if rehearsal_ratio is None:
            if counts is None or len(counts) != len(sizes):
                raise _invalid('Expected one count per source (see mixture_counts)')
            tables = lambda s, e: plan_mixture_epoch(sizes, counts, s, e)  # noqa: E731
            total = sum(counts)
        else:
            if len(sizes) != 2:
                raise _invalid('rehearsal takes two sources: the task and the exemplars')
            shape = rehearsal_shape(sizes[0], sizes[1], rehearsal_ratio, batch_size, world_size)
            per = shape['steps'] * world_size
            counts = [per * shape['task'], per * shape['exemplars']]
            tables = lambda s, e: plan_rehearsal_epoch(sizes, shape, world_size, s, e)  # noqa: E731
            total = sum(counts)
        self.counts = list(counts)
        self.plan = EpochPlan([total], seed=seed, epoch=epoch, shuffle='none', rank=rank, world_size=world_size,
                              batch_size=batch_size, partition=partition, drop_last=drop_last,
                              resume_from=resume_from)
        self.source, self.position = tables(self.plan.seed, self.plan.epoch)

    def __len__(self) -> int:
        return len(self.plan)

    def batches(self) -> Iterator[List[Tuple[int, int]]]:
        """This rank's batches, each a list of (source, position)."""
        for batch in self.plan.batches():
            yield [(self.source[q], self.position[q]) for q in batch]

    def progress(self, yielded: int) -> Dict[str, Any]:
        """The epoch plan's progress after ``yielded`` samples of this rank (a Node mixture state's ``progress``)."""
        return self.plan.progress(yielded)
