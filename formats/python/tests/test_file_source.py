"""HandlePool.pread, the local read path: right bytes, handles released on every path, the LRU bound kept."""
import os

import pytest

from shardkit.errors import SHARD_MISMATCH, TRUNCATED, ShardkitError
from shardkit.file_source import HandlePool


@pytest.fixture
def files(tmp_path):
    paths = []
    for i in range(4):
        p = tmp_path / f'f{i}'
        p.write_bytes(bytes((i + j) & 255 for j in range(1000)))
        paths.append(str(p))
    return paths


def held(pool):
    return {path: h[1] for path, h in pool.handles.items()}


def test_pread_reads_the_span_and_releases(files):
    pool = HandlePool(2)
    opened = []
    for i, path in enumerate(files * 2):
        assert pool.pread(path, 10, 5, lambda fd, size: opened.append(size)) == bytes(((i % 4) + j) & 255 for j in range(10, 15))
        assert all(n == 0 for n in held(pool).values()) and len(pool.handles) <= 2
    assert opened == [1000] * 8  # two handles for four files, cycled: every file reopened, each checked on open
    assert pool.pread(files[3], 0, 0) == b''
    pool.close()


def test_pread_past_the_end_is_truncated_and_releases(files):
    pool = HandlePool(2)
    with pytest.raises(ShardkitError) as e:
        pool.pread(files[0], 990, 20)
    assert e.value.code == TRUNCATED and 'needed 20 bytes at offset 990 but the file ends at 1000' in str(e.value)
    assert held(pool) == {files[0]: 0}
    assert pool.pread(files[0], 990, 10) == bytes(j & 255 for j in range(990, 1000))
    pool.close()


def test_a_failed_open_check_closes_the_file_and_keeps_nothing(files):
    pool = HandlePool(2)

    def refuse(fd, size):
        raise ShardkitError(SHARD_MISMATCH, 'refused')

    before = set(os.listdir('/proc/self/fd'))
    with pytest.raises(ShardkitError, match='refused'):
        pool.pread(files[1], 0, 4, refuse)
    assert pool.handles == {} and set(os.listdir('/proc/self/fd')) == before
