"""ds[i], get, iteration and read_many (alone and coalesced) take different fast paths for one-member samples: they
return the same bytes and refuse damage and oversized members with the same code and message."""
import os
import shutil

import pytest

import shardkit
from conftest import write_dataset


@pytest.fixture(scope='module')
def packed(session_dir):
    """Six one-member samples and one of two members, in one packed shard: neighbours coalesce in read_many."""
    samples = [(f'k{i}', {'bin': bytes([i]) * (100 + i)}) for i in range(6)] + [('k6', {'a': b'A' * 50, 'b': b'B' * 9})]
    return write_dataset(os.path.join(session_dir, 'paths'), samples, layout='packed'), samples


def errors(ds, i):
    """(code, message) of every read path for position i."""
    key = ds.locate(i).key
    paths = [lambda: ds[i], lambda: ds.at(i), lambda: ds.get(key), lambda: ds.read_many([i]),
             lambda: ds.read_many([i - 1, i, i + 1]), lambda: list(ds.items(start=key, limit=1))]
    out = set()
    for read in paths:
        with pytest.raises(shardkit.ShardkitError) as e:
            read()
        out.add((e.value.code, str(e.value)))
    return out


def test_every_path_reads_the_same_bytes(packed):
    d, samples = packed
    want = [{'__key__': k, **m} for k, m in samples]
    with shardkit.open_dataset(d) as ds:
        assert [ds[i] for i in range(7)] == list(ds) == [ds.get(k) for k, _ in samples] == want
        assert ds.read_many(range(7)) == want
        assert ds.read_many([6, 3, 3, 0, 5]) == [want[i] for i in (6, 3, 3, 0, 5)]


def test_damage_is_the_same_error_on_every_path(packed, tmp_path):
    d, _ = packed
    copy = str(tmp_path / 'ds')
    shutil.copytree(d, copy)
    with shardkit.open_dataset(copy) as ds:
        e = ds.locate(3)
        shard = os.path.join(copy, ds.manifest['shards'][e.shard]['file'])
    with open(shard, 'r+b') as f:  # one byte of sample 3's member (not the fingerprinted head)
        f.seek(e.offset + 50)
        byte = f.read(1)
        f.seek(e.offset + 50)
        f.write(bytes([byte[0] ^ 0xFF]))
    with shardkit.open_dataset(copy, check_shards='size') as ds:
        got = errors(ds, 3)
        assert len(got) == 1, got
        code, message = got.pop()
        assert code == 'SHARDKIT_ERR_CHECKSUM' and 'sample "k3" member "bin"' in message
        assert ds[2]['bin'] == bytes([2]) * 102  # its neighbours read
    with shardkit.open_dataset(copy, check_shards='size', verify=False) as ds:
        assert ds[3]['bin'][50] == 3 ^ 0xFF and ds.read_many([3])[0] == ds[3]


def test_too_large_is_the_same_error_on_every_path(packed):
    d, _ = packed
    with shardkit.open_dataset(d, max_member_bytes=102) as ds:
        assert ds[2]['bin'] == bytes([2]) * 102 and ds.read_many([1, 2])[1] == ds[2]
        got = errors(ds, 3)
        assert len(got) == 1, got
        code, message = got.pop()
        assert code == 'SHARDKIT_ERR_TOO_LARGE' and 'sample "k3" member "bin" is 103 bytes, over max_member_bytes 102' in message
