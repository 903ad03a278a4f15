"""Dataset.preload_index (BTree.load_positions): every leaf decoded at once, by checked descents, so that positional
reads decode and descend no more (what a DataLoader's forked workers inherit); nothing when the index does not fit
the page cache; a damaged leaf reported as the reads report it."""
import hashlib
import json
import os
import random
import shutil

import pytest

import shardkit
from conftest import write_dataset

N = 1500


def no_page_reads(page_no):
    raise AssertionError(f'index page {page_no} read after preload_index')


@pytest.fixture(scope='module')
def many_leaves(session_dir):
    directory = os.path.join(session_dir, 'preload')
    # keys with random tails (no shared prefix to compress): a tree of about 40 pages
    samples = [(f'k/{i:04d}-' + hashlib.md5(b'%d' % i).hexdigest()[:i % 30],
                {'bin': bytes((i + j) & 0xFF for j in range(10 + i % 50))}) for i in range(N)]
    return write_dataset(directory, samples, pageSize=1024, shardBytes=8 * 1024), samples


def test_preload_decodes_every_leaf_and_reads_need_no_page_after_it(many_leaves):
    directory, samples = many_leaves
    with shardkit.open_dataset(directory) as ds:
        assert ds.preload_index() is True
        starts, leaves = ds._tree.directory
        assert len(leaves) > 10  # a real tree of many leaves
        assert starts[0] == 0 and all(a + len(leaf.keys) == b for a, b, leaf in zip(starts, starts[1:], leaves))
        assert starts[-1] + len(leaves[-1].keys) == N
        ds._tree.read_page = no_page_reads
        order = list(range(N))
        random.Random(5).shuffle(order)
        want = [{'__key__': k, **m} for k, m in samples]
        assert [ds[i] for i in order] == [want[i] for i in order]
        assert ds.read_many(order) == [want[i] for i in order]


def test_preload_does_nothing_when_the_index_does_not_fit_the_page_cache(many_leaves):
    directory, _ = many_leaves
    with shardkit.open_dataset(directory, page_cache_bytes=0) as ds:  # 16 pages, fewer than this index holds
        assert ds._header.page_count > ds._tree.capacity
        assert ds.preload_index() is False
        assert ds._tree.directory == ([], [])
        assert ds[N - 1]['__key__'].startswith(f'k/{N - 1:04d}-')


def test_a_damaged_leaf_fails_preload_with_the_code_of_a_read_and_spares_the_other_reads(many_leaves, tmp_path):
    directory = str(tmp_path / 'damaged')
    shutil.copytree(many_leaves[0], directory)
    with shardkit.open_dataset(directory) as ds:
        leaf, base = ds._tree.leaf_at(N // 2)
        page_size = ds._header.page_size
        index = os.path.join(directory, ds.manifest['index']['file'])
    with open(index, 'r+b') as f:
        f.seek(leaf.page_no * page_size + 40)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x5A]))
    with shardkit.open_dataset(directory) as ds:
        with pytest.raises(shardkit.ShardkitError) as preload:
            ds.preload_index()
        assert ds._tree.directory[0] == [] or base not in ds._tree.directory[0]
    with shardkit.open_dataset(directory) as ds:
        with pytest.raises(shardkit.ShardkitError) as read:
            ds[base]
        assert preload.value.code == read.value.code == 'SHARDKIT_ERR_CORRUPT_INDEX'
        assert str(preload.value) == str(read.value)
        assert ds[0]['__key__'] == 'k/0000-'

    torch = pytest.importorskip('torch')  # Debian's python3-torch; .ci/run installs it
    from shardkit.torch import ShardkitDataset
    data = ShardkitDataset(directory)
    assert len(data) == N  # the preload's error is left to the read that reaches the damaged leaf
    assert data[0]['__key__'] == 'k/0000-'
    with pytest.raises(shardkit.ShardkitError) as through_torch:
        data[base]
    assert through_torch.value.code == 'SHARDKIT_ERR_CORRUPT_INDEX'
    assert torch is not None


def test_preload_index_on_a_closed_dataset_is_closed(many_leaves):
    ds = shardkit.open_dataset(many_leaves[0])
    ds.close()
    with pytest.raises(shardkit.ShardkitError) as e:
        ds.preload_index()
    assert e.value.code == 'SHARDKIT_ERR_CLOSED'
    assert json.dumps(e.value.code)
