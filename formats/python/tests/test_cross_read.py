"""Datasets written by the Node side (DatasetWriter) read byte for byte the same in Python: by position, by key,
by range, along the leaf chain; both layouts, LZ4, many shards, small pages (deep trees)."""
import os

import pytest

import shardkit
from conftest import write_dataset
from datasets import random_samples

CONFIGS = [
    ('tar', 'none', 1024, 32 * 1024),
    ('tar', 'lz4', 1024, 64 * 1024),
    ('packed', 'none', 1024, 16 * 1024),
    ('packed', 'lz4', 2048, 256 * 1024),
    ('tar', 'none', 4096, 1 << 30),
]


@pytest.fixture(scope='module', params=range(len(CONFIGS)), ids=lambda i: '-'.join(map(str, CONFIGS[i][:3])))
def written(request, session_dir):
    layout, compress, page_size, shard_bytes = CONFIGS[request.param]
    samples = random_samples(1000 + request.param, 400 if page_size == 1024 else 250)
    directory = os.path.join(session_dir, f'cross-{request.param}')
    write_dataset(directory, samples, layout=layout, compress=compress, pageSize=page_size, shardBytes=shard_bytes)
    return directory, samples


def as_sample(key, members):
    return {'__key__': key, **members}


def test_every_sample_by_position_and_key(written):
    directory, samples = written
    with shardkit.open_dataset(directory) as ds:
        assert len(ds) == len(samples)
        for i, (key, members) in enumerate(samples):
            assert ds[i] == as_sample(key, members)
        for i in range(len(samples) - 1, -1, -7):  # backwards: every descent from the root
            assert ds.at(i)['__key__'] == samples[i][0]
        for key, members in reversed(samples):
            assert ds.get(key) == as_sample(key, members)
            assert key in ds
        assert [s['__key__'] for s in ds] == [k for k, _ in samples]


def test_deep_tree_and_many_shards(written):
    directory, samples = written
    with shardkit.open_dataset(directory) as ds:
        assert sum(ds.shard_sizes) == len(samples)
        assert ds.shard_sizes == [s['samples'] for s in ds.manifest['shards']]
        if ds.manifest['index']['pageSize'] == 1024:
            assert ds._header.height >= 3
            assert len(ds.shard_sizes) >= 8


def test_absent_keys(written):
    directory, samples = written
    present = {k for k, _ in samples}
    with shardkit.open_dataset(directory) as ds:
        for key, _ in samples[::5]:
            for probe in (key + '\0', key[:-1], key + 'a', '\uffff' + key, ''):
                if probe not in present:
                    assert probe not in ds
                    with pytest.raises(shardkit.ShardkitError) as e:
                        ds.get(probe)
                    assert e.value.code == 'SHARDKIT_ERR_KEY_NOT_FOUND'
                    assert ds.get(probe, None) is None


def test_ranges(written):
    directory, samples = written
    keys = [k for k, _ in samples]
    with shardkit.open_dataset(directory) as ds:
        assert list(ds.keys()) == keys
        for prefix in ['a/', 'a/b/', 'dir/', '😀', 'n01440764/n', 'Ω/ж/漢', 'zzz', '']:
            assert list(ds.keys(prefix=prefix)) == [k for k in keys if k.startswith(prefix)], prefix
        for lo, hi in [(keys[3], keys[50]), (keys[0], keys[-1]), ('a', 'b'), ('😀', '\U0010ffff'), (keys[9], keys[9])]:
            assert list(ds.keys(start=lo, end=hi)) == [k for k in keys if lo <= k < hi]
        assert list(ds.keys(prefix='a/', start='a/b', end='a/c')) == [k for k in keys if k.startswith('a/b')]
        assert list(ds.keys(limit=5)) == keys[:5]
        assert list(ds.keys(reverse=True)) == keys[::-1]
        assert list(ds.keys(prefix='a/', reverse=True, limit=4)) == [k for k in keys if k.startswith('a/')][::-1][:4]
        items = list(ds.items(start=keys[10], limit=30))
        assert items == [as_sample(k, m) for k, m in samples[10:40]]


def test_node_reads_the_same_keys_and_ranges(written):
    """The Node reader, asked the same range queries, returns the same keys (it is the reference)."""
    from conftest import node
    directory, samples = written
    keys = [k for k, _ in samples]
    ranges = [{'prefix': 'a/'}, {'start': keys[7], 'end': keys[77]}, {'prefix': '😀'}, {'prefix': 'n01440764/', 'start': 'n01440764/n'},
              {'reverse': True}, {'prefix': 'a/', 'reverse': True, 'limit': 7}, {'start': keys[3], 'end': keys[-3], 'limit': 50, 'reverse': True},
              {'limit': 0}, {'prefix': 'dir/', 'limit': 3}]
    answer = node('probe', {'jobs': [{'location': directory, 'ops': [['keys', r] for r in ranges]}]})[0]
    with shardkit.open_dataset(directory) as ds:
        assert answer['results'] == [list(ds.keys(**r)) for r in ranges]


def test_without_verification_and_with_size_checks(written):
    directory, samples = written
    with shardkit.open_dataset(directory, verify=False, check_shards='size', max_open_shards=1, mmap=False) as ds:
        for i in range(0, len(samples), 3):
            assert ds[i] == as_sample(*samples[i])
        # one handle at a time: a shard is opened again whenever another was read in between (empty spans read nothing)
        spans = [ds.locate(i) for i in range(0, len(samples), 3)]
        shards = [e.shard for e in spans if e.length > 0]
        assert ds._pool.opens == 1 + sum(a != b for a, b in zip(shards, shards[1:]))


def test_read_many_equals_reads_one_by_one(written):
    import random
    directory, samples = written
    rng = random.Random(3)
    with shardkit.open_dataset(directory) as ds:
        for positions in ([], list(range(len(ds))), [rng.randrange(-len(ds), len(ds)) for _ in range(200)],
                          [5, 5, 6, 4, 5]):
            assert ds.read_many(positions) == [as_sample(*samples[p]) for p in positions]
        assert ds.__getitems__([1, 0]) == [as_sample(*samples[1]), as_sample(*samples[0])]


def test_positions_of_any_integer_type_and_slices(written):
    import numpy as np
    directory, samples = written
    with shardkit.open_dataset(directory) as ds:
        assert ds[np.int64(3)] == ds[3] == ds.at(np.uint8(3)) == as_sample(*samples[3])
        assert ds[np.int32(-1)] == as_sample(*samples[-1])
        assert ds[2:9:3] == [as_sample(*samples[i]) for i in (2, 5, 8)]
        assert ds[-2:] == [as_sample(*s) for s in samples[-2:]]
        assert ds.read_many(np.array([4, 1])) == [as_sample(*samples[4]), as_sample(*samples[1])]
        for bad in (1.0, '3', True, None):
            with pytest.raises(shardkit.ShardkitError) as e:
                ds[bad]
            assert e.value.code == 'SHARDKIT_ERR_INVALID_ARG'
        for bad in (len(ds), -len(ds) - 1):
            with pytest.raises(IndexError) as e:
                ds[bad]
            assert e.value.code == 'SHARDKIT_ERR_OUT_OF_RANGE' and str(bad) in e.value.message
