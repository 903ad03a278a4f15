"""Local shards read through memory maps (the default) and through os.pread (mmap=False): the same bytes and the
same errors; the maps' bound, their checks at every mapping, close; the directory of leaves that positional
lookups use instead of a descent."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardkit
from conftest import write_dataset
from datasets import random_samples


def as_sample(key, members):
    return {'__key__': key, **members}


@pytest.fixture(scope='module', params=[('tar', 'none'), ('packed', 'lz4')], ids=lambda p: '-'.join(p))
def written(request, session_dir):
    layout, compress = request.param
    samples = random_samples(4242, 300)
    directory = os.path.join(session_dir, f'mapped-{layout}-{compress}')
    write_dataset(directory, samples, layout=layout, compress=compress, pageSize=1024, shardBytes=48 * 1024)
    return directory, samples


def test_maps_and_pread_read_the_same_bytes(written):
    directory, samples = written
    want = [as_sample(k, m) for k, m in samples]
    positions = [(i * 37) % len(samples) for i in range(len(samples))] + [-1, -len(samples), 5, 5]
    with shardkit.open_dataset(directory) as mapped, shardkit.open_dataset(directory, mmap=False) as plain:
        assert mapped.mmap and not plain.mmap
        for ds in (mapped, plain):
            assert [ds[i] for i in positions] == [want[i] for i in positions]
            assert ds.read_many(positions) == [want[i] for i in positions]
            assert [ds.get(k) for k, _ in samples[::-3]] == want[::-3]
            assert list(ds) == want
        assert mapped.maps_made == len(mapped.shard_sizes) == len(mapped._maps) and mapped._pool.opens == 0
        assert plain.maps_made == 0 and not plain._maps


def test_no_more_maps_than_max_open_shards(written):
    directory, samples = written
    with shardkit.open_dataset(directory, max_open_shards=2) as ds:
        shards = [ds.locate(i).shard for i in range(len(ds))]
        assert len(set(shards)) > 3
        for i in range(len(ds)):
            assert ds[i] == as_sample(*samples[i])
            assert len(ds._maps) <= 2
        # a shard read after two others is mapped again: one map per change of shard, past the first two
        changes = sum(a != b for a, b in zip(shards, shards[1:]))
        assert ds.maps_made == 1 + changes


def test_a_shard_changed_before_it_is_mapped_again_is_refused(written, tmp_path):
    """The size is checked at every mapping (a map past the bound is made again), not only at first use."""
    source, _ = written
    d = str(tmp_path / 'ds')
    shutil.copytree(source, d)
    with shardkit.open_dataset(d, max_open_shards=1) as ds:
        first, last = ds.locate(0), ds.locate(len(ds) - 1)
        assert first.shard != last.shard
        ds[0], ds[len(ds) - 1]  # shard 0 mapped, then dropped for the last shard's map
        assert first.shard not in ds._maps
        path = os.path.join(d, ds.manifest['shards'][first.shard]['file'])
        with open(path, 'r+b') as f:
            f.truncate(os.path.getsize(path) - 1)
        with pytest.raises(shardkit.ShardkitError) as e:
            ds[0]
        assert e.value.code == 'SHARDKIT_ERR_TRUNCATED' and path in str(e.value)
        with open(path, 'ab') as f:
            f.write(b'\0\0')
        with pytest.raises(shardkit.ShardkitError) as e:
            ds[0]
        assert e.value.code == 'SHARDKIT_ERR_SHARD_MISMATCH'


def test_reads_after_close_are_refused_and_the_maps_are_dropped(written):
    directory, _ = written
    ds = shardkit.open_dataset(directory)
    ds[0], ds.read_many([1, 2])
    maps = list(ds._maps.values())
    assert maps
    ds.close()
    assert ds._maps == {}
    for read in (lambda: ds[0], lambda: ds.read_many([0]), lambda: ds.get(ds.locate(0).key)):
        with pytest.raises(shardkit.ShardkitError) as e:
            read()
        assert e.value.code == 'SHARDKIT_ERR_CLOSED'
    del maps


def test_mmap_option_is_a_boolean(written):
    directory, _ = written
    with pytest.raises(shardkit.ShardkitError) as e:
        shardkit.open_dataset(directory, mmap='yes')
    assert e.value.code == 'SHARDKIT_ERR_INVALID_ARG' and 'mmap' in str(e.value)


def test_pread_reports_a_shard_truncated_under_it_where_a_map_cannot(written, tmp_path):
    """The trade-off the README states: a shard truncated while it is mapped kills the reading process with SIGBUS
    (as it would under py-lmdb); with mmap=False the same read raises TRUNCATED."""
    source, _ = written
    d = str(tmp_path / 'ds')
    shutil.copytree(source, d)
    script = textwrap.dedent('''
        import os, sys
        import shardkit
        ds = shardkit.open_dataset(sys.argv[1], mmap=sys.argv[2] == 'map', verify=False)
        last = len(ds) - 1
        where = ds.locate(last)
        ds[0], ds[last]
        path = os.path.join(sys.argv[1], ds.manifest['shards'][where.shard]['file'])
        os.truncate(path, 0)
        try:
            ds[last]
        except shardkit.ShardkitError as e:
            print(e.code)
    ''')
    env = {**os.environ, 'PYTHONPATH': os.path.dirname(os.path.dirname(shardkit.__file__))}

    def run(mode):
        shutil.rmtree(d)
        shutil.copytree(source, d)
        return subprocess.run([sys.executable, '-c', script, d, mode], capture_output=True, text=True, env=env,
                              timeout=120)

    plain = run('pread')
    assert plain.returncode == 0 and plain.stdout.strip() == 'SHARDKIT_ERR_TRUNCATED', plain.stderr
    mapped = run('map')
    assert mapped.returncode == -7, (mapped.returncode, mapped.stdout, mapped.stderr)  # SIGBUS


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_positional_lookups_through_the_directory_equal_descents(written, data):
    """Any order of positions, with a page cache small enough to evict (which empties the directory): the leaf and
    base of every lookup are those of a descent from the root, and the directory stays sorted and consistent."""
    directory, samples = written
    cache_pages = data.draw(st.sampled_from([16, 1 << 10]))
    with shardkit.open_dataset(directory, page_cache_bytes=cache_pages * 1024) as ds, \
            shardkit.open_dataset(directory, page_cache_bytes=0) as fresh:
        n = len(ds)
        positions = data.draw(st.lists(st.integers(-n, n - 1), max_size=80))
        for p in positions:
            assert ds[p] == as_sample(*samples[p])
            leaf, base = ds._tree.leaf_at(p % n)
            fresh._tree.directory = ([], [])  # a descent every time
            want_leaf, want_base = fresh._tree.leaf_at(p % n)
            assert (leaf.page_no, base) == (want_leaf.page_no, want_base)
            starts, leaves = ds._tree.directory
            assert starts == sorted(set(starts)) and len(starts) == len(leaves)
            assert all(s + len(lf.keys) <= t for s, lf, t in zip(starts, leaves, starts[1:] + [n]))
            assert len(leaves) <= len(ds._tree.cache)
        with pytest.raises(IndexError):
            ds[n]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_key_lookups_through_the_directory_equal_descents(written, data):
    """Keys present and absent (between, before and after the dataset's, prefixes of its), in any order, with a
    page cache small enough to evict: find, get, `in`, position and lower_bound answer as a descent does."""
    directory, samples = written
    keys = [k for k, _ in samples]
    cache_pages = data.draw(st.sampled_from([16, 1 << 10]))
    candidates = st.one_of(st.sampled_from(keys), st.sampled_from(keys).map(lambda k: k[:-1]),
                           st.sampled_from(keys).map(lambda k: k + '\0'), st.text(max_size=8))
    with shardkit.open_dataset(directory, page_cache_bytes=cache_pages * 1024) as ds, \
            shardkit.open_dataset(directory, page_cache_bytes=0) as fresh:
        for key in data.draw(st.lists(candidates, max_size=60)):
            fresh._tree.key_directory = ([], [])  # a descent every time
            want = fresh._tree.find(key)
            got = ds._tree.find(key)
            assert (got and (got[0].page_no, got[1], got[2])) == (want and (want[0].page_no, want[1], want[2]))
            fresh._tree.key_directory = ([], [])
            assert ds._tree.lower_bound(key) == fresh._tree.lower_bound(key)
            if key in keys:
                assert ds.get(key) == as_sample(*samples[keys.index(key)]) and key in ds
                assert ds.position(key) == keys.index(key)
            else:
                assert ds.get(key, None) is None and key not in ds
            lows, entries = ds._tree.key_directory
            assert lows == sorted(set(lows)) and len(lows) == len(entries)
            for low, (high, leaf, _), next_low in zip(lows, entries, lows[1:] + [None]):
                assert low <= leaf.keys[0] and (high is None or leaf.keys[-1] < high)
                assert next_low is None or (high is not None and high <= next_low)  # disjoint ranges


def test_a_dataloader_worker_killed_by_sigbus_fails_the_loop_without_a_hang(written, tmp_path):
    """The map's failure mode in a DataLoader: the worker dies of SIGBUS, the main process raises (no hang)."""
    pytest.importorskip('torch')
    source, _ = written
    d = str(tmp_path / 'ds')
    shutil.copytree(source, d)
    script = textwrap.dedent('''
        import os, sys
        from torch.utils.data import DataLoader
        from shardkit.torch import ShardkitDataset, list_collate

        class TruncatedMidway:
            def __init__(self, data):
                self.data = data
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                sample = self.data[i]  # its shard is mapped now
                if i == len(self.data) // 2:  # every shard cut to nothing while the worker has it mapped
                    for s in self.data.dataset.manifest['shards']:
                        os.truncate(os.path.join(sys.argv[1], s['file']), 0)
                    sample = self.data[i]
                return sample

        data = ShardkitDataset(sys.argv[1], verify=False)
        try:
            for _ in DataLoader(TruncatedMidway(data), batch_size=4, num_workers=2, collate_fn=list_collate):
                pass
        except RuntimeError as e:
            print('raised:', e)
    ''')
    env = {**os.environ, 'PYTHONPATH': os.path.dirname(os.path.dirname(shardkit.__file__))}
    run = subprocess.run([sys.executable, '-c', script, d], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and 'raised: DataLoader worker' in run.stdout, (run.stdout, run.stderr)
