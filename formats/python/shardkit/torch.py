"""PyTorch integration: shardkit datasets as ``torch.utils.data`` datasets and samplers, in the Node loader's order.

torch is imported here only; ``import shardkit`` never imports it.

- :class:`ShardkitDataset`: map-style (``ds[i]`` is the i-th sample in key order), optional per-sample transform;
  works in ``DataLoader(num_workers>0)`` under fork, forkserver and spawn (each process opens its own files).
- :class:`EpochSampler`: the shared epoch plan as a ``Sampler``: ``set_epoch``, rank and world size (from
  ``torch.distributed`` when it is initialized), and ``state_dict()`` / ``load_state_dict()`` holding Node's
  ``loader.state()`` JSON (a few hundred bytes), so a job resumes exactly, on any number of ranks, in Python
  or in Node.
- :class:`ShardkitIterableDataset`: reads its rank's plan batch by batch, the batches dealt round-robin to the
  DataLoader's workers (which is the order a DataLoader collects them in), with a read-ahead thread per worker.

>>> from torch.utils.data import DataLoader
>>> data = ShardkitDataset('/data/train.shards', transform=decode)
>>> sampler = EpochSampler(data, shuffle='full', seed=7, batch_size=64)  # rank and world size from torch.distributed
>>> loader = DataLoader(data, batch_size=64, sampler=sampler, num_workers=4)
>>> for epoch in range(epochs):
...     sampler.set_epoch(epoch)
...     for step, batch in enumerate(loader):
...         train(batch)
...         checkpoint['sampler'] = sampler.global_state_dict((step + 1) * 64)
"""
import copy
import os
import queue
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import torch.distributed
from torch.utils.data import Dataset as TorchDataset
from torch.utils.data import IterableDataset, Sampler, get_worker_info

from .dataset import Dataset, open_dataset
from .epoch_plan import EpochPlan, merge_states
from .epoch_state import bad_state
from .errors import INVALID_ARG, ShardkitError
from .shared_batch import SharedBatch
from . import worker_heap

__all__ = ['ShardkitDataset', 'EpochSampler', 'ShardkitIterableDataset', 'list_collate']

Source = Union[str, 'os.PathLike[str]', Dataset, 'ShardkitDataset', Sequence[int]]


def list_collate(batch: List[Any]) -> List[Any]:
    """A DataLoader ``collate_fn`` that keeps a batch as the list of samples (``default_collate`` refuses bytes).
    A module-level function, so it pickles for spawned workers."""
    return batch


class ShardkitDataset(TorchDataset):
    """Map-style dataset over a shardkit Dataset or a path/URL: ``data[i]`` is ``transform(ds[i])``, the i-th
    sample in key order (``{'__key__': key, ext: bytes, ...}`` without a transform).

    Given a path, the dataset is opened on first use in each process (``open_options`` go to ``open_dataset``);
    given a Dataset, each worker gets its own copy of it, which reopens its files lazily. Either way no file
    offset or socket is shared across processes. ``transform`` must pickle (a module-level function) for
    spawned workers.

    ``preload_index`` (default True): the first use in the main process (``len()``, which a sampler calls before
    the DataLoader starts its workers) decodes the whole local index when it fits ``page_cache_bytes`` (about
    2.7 us per sample and 370 MiB per million samples, once); forked workers inherit it and decode nothing, epoch
    after epoch (without it, each worker decodes the leaves it reads: the same cost, in every worker).

    ``shared_memory`` (default False; Linux): a batch read in a worker (``__getitems__``) is a
    :class:`shardkit.shared_batch.SharedBatch`, whose ``bytes`` reach the main process through a shared-memory
    ring of the worker (8 MiB) instead of the DataLoader's pipe: the main process receives the same list of
    samples and spends about 40% less CPU time per batch. Keep it with a ``collate_fn`` that returns the batch it
    is given (:func:`list_collate`); another collate's output goes through the pipe as usual.

    ``tune_worker_malloc`` (default True; glibc): in a DataLoader worker, the first read makes the worker's heap keep
    freed memory for the next batch instead of giving it back to the kernel and faulting it in again
    (:mod:`shardkit.worker_heap`): with `shared_memory=True` on 1-100 KiB samples, about half the workers' CPU. The main
    process is left as it is.

    >>> loader = DataLoader(ShardkitDataset('/data/train.shards', shared_memory=True), batch_size=64,
    ...                     shuffle=True, num_workers=2, collate_fn=list_collate, persistent_workers=True)
    """

    def __init__(self, dataset: Union[str, 'os.PathLike[str]', Dataset],
                 transform: Optional[Callable[[Dict[str, Any]], Any]] = None, *, preload_index: bool = True,
                 shared_memory: bool = False, tune_worker_malloc: bool = True, **open_options: Any):
        if isinstance(dataset, (str, os.PathLike)):
            self._location: Optional[str] = os.fspath(dataset)
            self._ds: Optional[Dataset] = None
        elif isinstance(dataset, Dataset):
            if open_options:
                raise ShardkitError(INVALID_ARG, 'open options apply to a path or URL, not to an open Dataset: '
                                                 f"pass them to open_dataset() instead ({', '.join(open_options)})")
            self._location = None
            self._ds = dataset
        else:
            raise ShardkitError(INVALID_ARG, f'Expected a path, URL or shardkit Dataset for dataset but received '
                                             f'{type(dataset).__name__}')
        if transform is not None and not callable(transform):
            raise ShardkitError(INVALID_ARG, f'Expected a callable for transform but received {type(transform).__name__}')
        if not isinstance(preload_index, bool):
            raise ShardkitError(INVALID_ARG, f'Expected a boolean for preload_index but received {preload_index!r}')
        if not isinstance(shared_memory, bool):
            raise ShardkitError(INVALID_ARG, f'Expected a boolean for shared_memory but received {shared_memory!r}')
        if not isinstance(tune_worker_malloc, bool):
            raise ShardkitError(INVALID_ARG, f'Expected a boolean for tune_worker_malloc but received '
                                             f'{tune_worker_malloc!r}')
        self.shared_memory = shared_memory
        self.tune_worker_malloc = tune_worker_malloc
        self._heap_seen = None  # worker_heap.process_generation when this process's heap was seen to
        self.transform = transform
        self._open_options = open_options
        self._preload = preload_index

    @property
    def dataset(self) -> Dataset:
        """The shardkit Dataset, opened in this process on first use."""
        if self._ds is None:
            self._ds = open_dataset(self._location, **self._open_options)
        if self._preload:
            self._preload_in_main_process()
        return self._ds

    def _preload_in_main_process(self) -> None:
        # The main process uses the dataset first (len() for the sampler), before the DataLoader forks its workers:
        # decoding the index there, once, spares each worker of each epoch from decoding it again. Workers (and
        # spawned ones, which receive no decoded page) never preload: they decode only the leaves they read.
        self._preload = False
        if get_worker_info() is None and not self._ds._remote:
            try:
                self._ds.preload_index()
            except ShardkitError:
                pass  # a damaged index page: the reads that reach it report it, as they would without preloading

    @property
    def shard_sizes(self) -> List[int]:
        return self.dataset.shard_sizes

    @property
    def identity(self) -> Dict[str, Any]:
        return self.dataset.identity

    def __len__(self) -> int:
        return len(self.dataset)

    def _see_to_heap(self) -> None:
        self._heap_seen = worker_heap.process_generation
        if self.tune_worker_malloc and get_worker_info() is not None:
            worker_heap.keep_freed_memory()

    def __getitem__(self, index: int) -> Any:
        if self._heap_seen != worker_heap.process_generation:
            self._see_to_heap()
        sample = self.dataset[index]
        return sample if self.transform is None else self.transform(sample)

    def __getitems__(self, indices: Sequence[int]) -> List[Any]:
        """A batch, read with coalesced reads (``Dataset.read_many``); PyTorch 2's DataLoader calls it per batch."""
        if self._heap_seen != worker_heap.process_generation:
            self._see_to_heap()
        samples = self.dataset.read_many(indices)
        if self.transform is not None:
            samples = [self.transform(sample) for sample in samples]
        if self.shared_memory and get_worker_info() is not None:
            return SharedBatch(samples)  # its bytes cross to the main process through shared memory
        return samples

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        if self._location is not None:
            state['_ds'] = None  # reopened in the receiving process
        state['_heap_seen'] = None  # a spawned process sees to its own heap
        return state


def _shard_sizes_and_identity(source: Any):
    if isinstance(source, (str, os.PathLike)):
        source = open_dataset(source)
    if hasattr(source, 'shard_sizes') and hasattr(source, 'identity'):
        return list(source.shard_sizes), dict(source.identity)
    return list(source), None


def _default_rank_and_world(rank: Optional[int], world_size: Optional[int]):
    distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
    if world_size is None:
        world_size = torch.distributed.get_world_size() if distributed else 1
    if rank is None:
        rank = torch.distributed.get_rank() if distributed else 0
    return rank, world_size


class _EpochProgress:
    """What EpochSampler and ShardkitIterableDataset share: the plan options, the epoch, a pending resume state,
    and the plan of the current epoch (built once: computing an order is O(N))."""

    def __init__(self, source: Any, *, seed, shuffle, window_shards, rank, world_size, partition, batch_size,
                 drop_last, epoch):
        self.shard_sizes, self.dataset_identity = _shard_sizes_and_identity(source)
        rank, world_size = _default_rank_and_world(rank, world_size)
        self.options = dict(seed=seed, shuffle=shuffle, window_shards=window_shards, rank=rank, world_size=world_size,
                            partition=partition, batch_size=batch_size, drop_last=drop_last)
        self.epoch = epoch
        self.resume: Optional[Dict[str, Any]] = None
        self._plan: Optional[EpochPlan] = None
        self.plan()  # checks the options now, not in a worker

    def plan(self) -> EpochPlan:
        if self._plan is None or self._plan.epoch != self.epoch:
            self._plan = EpochPlan(self.shard_sizes, epoch=self.epoch, resume_from=self.resume,
                                   dataset_identity=self.dataset_identity, **self.options)
        return self._plan

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.resume = None  # a resume state belongs to the epoch it was saved in
            self._plan = None
            self.plan()

    def state(self, consumed: int) -> Dict[str, Any]:
        plan = self.plan()
        yielded = min(consumed, plan.length) if isinstance(consumed, int) and consumed >= 0 else consumed
        progress = plan.state(yielded) if self.dataset_identity is not None else plan.progress(yielded)
        return {'epoch': self.epoch, 'state': progress}

    def global_state(self, consumed: int) -> Dict[str, Any]:
        """The merged state when every rank consumed ``consumed`` samples of its plan (ranks in lockstep)."""
        mine = self.state(consumed)['state']
        states = []
        for r in range(self.options['world_size']):
            other = copy.deepcopy(mine)
            (other['progress'] if 'progress' in other else other)['rank'] = r
            states.append(other)
        return {'epoch': self.epoch, 'state': merge_states(states)}

    def load(self, state_dict: Dict[str, Any]) -> None:
        if not isinstance(state_dict, dict) or 'epoch' not in state_dict or 'state' not in state_dict:
            raise bad_state(f'Expected a state_dict() with epoch and state but received {type(state_dict).__name__}')
        previous = (self.epoch, self.resume, self._plan)
        self.epoch, self.resume, self._plan = state_dict['epoch'], state_dict['state'], None
        try:
            self.plan()  # BAD_STATE now if it does not fit this dataset and these options
        except Exception:
            self.epoch, self.resume, self._plan = previous
            raise


def _merge_state_dicts(state_dicts: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    if not isinstance(state_dicts, (list, tuple)) or not state_dicts:
        raise bad_state('merge_state_dicts needs the state_dict() of every rank but received none')
    epochs = {sd.get('epoch') if isinstance(sd, dict) else None for sd in state_dicts}
    if len(epochs) != 1:
        raise bad_state(f'merge_state_dicts received states of different epochs: {sorted(map(str, epochs))}')
    return {'epoch': epochs.pop(), 'state': merge_states([sd['state'] for sd in state_dicts])}


class EpochSampler(Sampler):
    """The Node loader's order for this rank as a torch Sampler of positions (indices of a ShardkitDataset).

    ``source``: a ShardkitDataset, a shardkit Dataset, a path, or a sequence of shard sizes. Options as
    :class:`shardkit.epoch_plan.EpochPlan` (and the Node loader): ``shuffle`` ('none' by default, as Node's),
    ``seed``, ``window_shards``, ``partition``; ``rank`` and ``world_size`` default to torch.distributed's
    when it is initialized. Give the DataLoader's ``batch_size`` and ``drop_last`` here too: the sampler then
    yields exactly the samples of Node's batches and its states equal Node's ``loader.state()``.

    Resume: ``state_dict(consumed)`` is this rank's state after ``consumed`` samples of the epoch (default: the
    indices handed to the DataLoader, exact with ``num_workers=0``; with workers pass ``steps * batch_size``, as
    workers fetch indices ahead). ``global_state_dict(consumed)`` is the whole job's state when every rank
    consumed that many (DDP steps in lockstep): save it from rank 0, and ``load_state_dict`` it on every rank
    of the new job, whatever its world size. States of ranks that stopped at different counts merge with
    :meth:`merge_state_dicts`. Nothing is repeated or lost.
    """

    def __init__(self, source: Source, *, seed=0, shuffle: str = 'none', window_shards: Optional[int] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None, partition: str = 'pad',
                 batch_size: int = 1, drop_last: bool = False, epoch: int = 0):
        super().__init__(None)
        self._progress = _EpochProgress(source, seed=seed, shuffle=shuffle, window_shards=window_shards, rank=rank,
                                        world_size=world_size, partition=partition, batch_size=batch_size,
                                        drop_last=drop_last, epoch=epoch)
        self._handed = 0

    @property
    def epoch(self) -> int:
        return self._progress.epoch

    @property
    def plan(self) -> EpochPlan:
        """The current epoch's plan (this rank's share, from the resume point if one was loaded)."""
        return self._progress.plan()

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch whose order the next iteration yields (call before each epoch, as with
        DistributedSampler). Drops a loaded resume state of another epoch."""
        if epoch != self._progress.epoch:
            self._handed = 0
        self._progress.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.plan)

    def __iter__(self) -> Iterator[int]:
        self._handed = 0
        for position in self.plan.samples():
            self._handed += 1
            yield position

    def state_dict(self, consumed: Optional[int] = None) -> Dict[str, Any]:
        """``{'epoch': e, 'state': <Node's loader.state() JSON>}`` after this rank consumed ``consumed`` samples
        of the current plan (default: the indices handed out)."""
        return self._progress.state(self._handed if consumed is None else consumed)

    def global_state_dict(self, consumed: int) -> Dict[str, Any]:
        """The whole job's state when every rank consumed ``consumed`` samples of its plan: loadable on any
        world size."""
        return self._progress.global_state(consumed)

    @staticmethod
    def merge_state_dicts(state_dicts: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
        """Merges every rank's ``state_dict()`` (gathered e.g. with ``torch.distributed.all_gather_object``)."""
        return _merge_state_dicts(state_dicts)

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Continues the saved epoch from where the state says: the next iteration yields only what was not
        consumed. Accepts a merged state, or a one-rank job's state; BAD_STATE for another dataset or options."""
        self._progress.load(state_dict)
        self._handed = 0


_END = object()


class ShardkitIterableDataset(IterableDataset):
    """This rank's plan as an iterable of batches: use ``DataLoader(data, batch_size=None, num_workers=K)``.

    Batch b of the plan goes to worker ``b mod K``; a DataLoader takes one batch from each worker in turn, so it
    yields the plan's batches in the plan's order, each sample exactly once, whatever K. Each worker reads
    ``read_ahead`` batches ahead in a thread. A batch is ``collate([transform(sample), ...])`` (default: the list).
    ``set_epoch``, ``state_dict(consumed)``, ``global_state_dict(consumed)`` and ``load_state_dict`` work as
    :class:`EpochSampler`'s (``consumed`` counts samples: batches received times ``batch_size``). Workers get
    a copy of this object when an epoch's iteration starts: with ``persistent_workers=True`` they keep the first
    epoch's, so call ``set_epoch`` with the default, non-persistent workers.
    """

    def __init__(self, dataset: Union[str, 'os.PathLike[str]', Dataset], *, batch_size: int = 1, seed=0,
                 shuffle: str = 'none', window_shards: Optional[int] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None, partition: str = 'pad', drop_last: bool = False, epoch: int = 0,
                 transform: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 collate: Optional[Callable[[List[Any]], Any]] = None, read_ahead: int = 2, **open_options: Any):
        super().__init__()
        self._data = ShardkitDataset(dataset, transform, **open_options)
        self._progress = _EpochProgress(self._data, seed=seed, shuffle=shuffle, window_shards=window_shards,
                                        rank=rank, world_size=world_size, partition=partition,
                                        batch_size=batch_size, drop_last=drop_last, epoch=epoch)
        if collate is not None and not callable(collate):
            raise ShardkitError(INVALID_ARG, f'Expected a callable for collate but received {type(collate).__name__}')
        if isinstance(read_ahead, bool) or not isinstance(read_ahead, int) or read_ahead < 0:
            raise ShardkitError(INVALID_ARG, f'Expected a non-negative integer for read_ahead but received {read_ahead!r}')
        self.collate = collate
        self.read_ahead = read_ahead

    @property
    def epoch(self) -> int:
        return self._progress.epoch

    @property
    def plan(self) -> EpochPlan:
        return self._progress.plan()

    def set_epoch(self, epoch: int) -> None:
        self._progress.set_epoch(epoch)

    def state_dict(self, consumed: int) -> Dict[str, Any]:
        return self._progress.state(consumed)

    def global_state_dict(self, consumed: int) -> Dict[str, Any]:
        return self._progress.global_state(consumed)

    merge_state_dicts = staticmethod(_merge_state_dicts)

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._progress.load(state_dict)

    def __len__(self) -> int:
        """Batches in this rank's plan (what the DataLoader yields with ``batch_size=None``)."""
        return self.plan.num_batches

    def __iter__(self) -> Iterator[Any]:
        plan = self.plan
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        batches = range(worker, plan.num_batches, workers)
        # A private copy: the read-ahead thread is then the only user of its files and caches.
        data = copy.copy(self._data)
        if data._location is None:
            data._ds = copy.copy(data._ds)
        if self.read_ahead == 0:
            for b in batches:
                yield self._read(data, plan, b)
            return
        yield from self._read_ahead(data, plan, batches)

    def _read(self, data: ShardkitDataset, plan: EpochPlan, b: int) -> Any:
        samples = data.__getitems__(plan.batch(b))
        return samples if self.collate is None else self.collate(samples)

    def _read_ahead(self, data: ShardkitDataset, plan: EpochPlan, batches: range) -> Iterator[Any]:
        ready: 'queue.Queue[Any]' = queue.Queue(maxsize=self.read_ahead)
        stop = threading.Event()

        def put(item: Any) -> bool:
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def read() -> None:
            try:
                for b in batches:
                    if not put(self._read(data, plan, b)):
                        return
            except BaseException as error:  # handed to the consumer, which raises it in the worker
                put((_END, error))
                return
            put((_END, None))

        thread = threading.Thread(target=read, name='shardkit-read-ahead', daemon=True)
        thread.start()
        try:
            while True:
                item = ready.get()
                if isinstance(item, tuple) and len(item) == 2 and item[0] is _END:
                    if item[1] is not None:
                        raise item[1]
                    return
                yield item
        finally:
            stop.set()  # the consumer stopped early: the thread exits at its next put
