"""A Dataset handed to other processes (pickle, fork, spawn, multiprocessing pools) reopens its files in each and
reads the same bytes; nothing open travels, and the parent's handles stay usable."""
import multiprocessing
import os
import pickle

import pytest

import shardkit
from conftest import digest, write_dataset
from datasets import random_samples
from workers import read_in_child, read_positions


@pytest.fixture(scope='module')
def local(session_dir):
    samples = random_samples(77, 300)
    d = write_dataset(os.path.join(session_dir, 'proc'), samples, layout='tar', compress='lz4', pageSize=1024,
                      shardBytes=64 * 1024)
    return d, samples


def test_pickle_round_trip_carries_no_descriptor(local):
    d, samples = local
    with shardkit.open_dataset(d, max_open_shards=3) as ds:
        ds[0], ds[len(ds) - 1]
        state = ds.__getstate__()
        assert state['_index_fd'] is None and state['_pool'].open_fds() == []
        copy = pickle.loads(pickle.dumps(ds))
        assert len(copy) == len(ds) and copy.manifest == ds.manifest and copy.identity == ds.identity
        assert [copy[i] for i in range(0, len(ds), 9)] == [ds[i] for i in range(0, len(ds), 9)]
        assert copy._index_fd != ds._index_fd and copy._pool.max_open == 3
        copy.close()
        assert ds[5]['__key__'] == samples[5][0]  # the original is untouched by the copy's close


@pytest.mark.parametrize('method', ['fork', 'spawn', 'forkserver'])
def test_pool_workers_read_the_same_bytes(local, method):
    d, samples = local
    ctx = multiprocessing.get_context(method)
    with shardkit.open_dataset(d) as ds:
        ds[3]  # the parent has open handles and cached pages before the workers start
        chunks = [(ds, list(range(i, len(ds), 4))) for i in range(4)]
        with ctx.Pool(2) as pool:
            results = pool.map(read_positions, chunks)
        assert {pid for pid, _ in results} - {os.getpid()}
        for (_, positions), (_, got) in zip(chunks, results):
            assert got == [digest({'__key__': samples[i][0], **samples[i][1]}) for i in positions]
        assert ds[7] == {'__key__': samples[7][0], **samples[7][1]}


def test_fork_child_opens_its_own_files_and_leaves_the_parents(local):
    d, samples = local
    ctx = multiprocessing.get_context('fork')
    with shardkit.open_dataset(d, mmap=False) as ds:
        ds[0]
        parent_fds = ds._pool.open_fds()
        q = ctx.Queue()
        p = ctx.Process(target=read_in_child, args=(ds, list(range(0, len(ds), 5)), q))
        p.start()
        status, got, _, child_fds, own_pool = q.get(timeout=60)
        p.join(60)
        assert status == 'ok' and own_pool
        assert got == [digest({'__key__': samples[i][0], **samples[i][1]}) for i in range(0, len(ds), 5)]
        assert child_fds  # opened in the child
        assert ds._pool.open_fds() == parent_fds
        for fd in parent_fds:
            os.fstat(fd)  # still open in the parent
        assert [ds[i]['__key__'] for i in range(len(ds))] == [k for k, _ in samples]


def test_fork_child_maps_its_own_shards_and_leaves_the_parents(local):
    d, samples = local
    ctx = multiprocessing.get_context('fork')
    with shardkit.open_dataset(d) as ds:
        assert ds.mmap
        ds[0], ds[len(ds) - 1]
        parent_maps = dict(ds._maps)
        assert len(parent_maps) == 2 and ds._pool.open_fds() == []  # no descriptor kept: each map holds its own
        q = ctx.Queue()
        p = ctx.Process(target=read_in_child, args=(ds, list(range(0, len(ds), 5)), q))
        p.start()
        status, got, _, _, own_maps = q.get(timeout=60)
        p.join(60)
        assert status == 'ok' and own_maps  # the child dropped the inherited maps at the fork, and mapped its own
        assert got == [digest({'__key__': samples[i][0], **samples[i][1]}) for i in range(0, len(ds), 5)]
        assert ds._maps == parent_maps and not any(m.closed for m in parent_maps.values())
        assert [ds[i] for i in range(len(ds))] == [{'__key__': k, **m} for k, m in samples]


def test_closed_dataset_refuses_reads(local):
    d, _ = local
    ds = shardkit.open_dataset(d)
    ds.close()
    ds.close()
    with pytest.raises(shardkit.ShardkitError) as e:
        ds[0]
    assert e.value.code == 'SHARDKIT_ERR_CLOSED'


@pytest.mark.parametrize('mmap', [False, True])
def test_threads_share_a_dataset_and_a_small_handle_pool(local, mmap):
    """Eight threads over two handles (or maps): a file in use is never closed (or unmapped) under a read (no EBADF,
    no wrong bytes)."""
    from concurrent.futures import ThreadPoolExecutor
    d, samples = local
    with shardkit.open_dataset(d, max_open_shards=2, mmap=mmap) as ds:
        assert len(ds.shard_sizes) > 4
        positions = list(range(len(ds))) * 3
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda i: ds[i], positions))
        assert got == [{'__key__': samples[i][0], **samples[i][1]} for i in positions]
        assert len(ds._pool.open_fds()) <= 2 and len(ds._maps) <= 2
        assert ds.maps_made > 2 if mmap else ds.maps_made == 0
