"""http(s) datasets through a real nginx on loopback: byte ranges, keep-alive, retries, timeouts, headers, and the
checks against a file replaced on the server."""
import multiprocessing
import os
import shutil
import socket
import threading
import time

import pytest

import shardkit
from conftest import digest, write_dataset
from datasets import random_samples
from workers import read_in_child


@pytest.fixture(scope='module')
def served(nginx):
    samples = random_samples(4242, 300)
    d = write_dataset(os.path.join(nginx.root, 'ds'), samples, layout='tar', compress='lz4', pageSize=1024,
                      shardBytes=64 * 1024)
    return nginx, d, samples


def copy_served(nginx, source, name):
    target = os.path.join(nginx.root, name)
    shutil.copytree(source, target)
    return target, f'{nginx.url}/{name}'


def test_reads_equal_the_local_dataset(served):
    nginx, d, samples = served
    with shardkit.open_dataset(f'{nginx.url}/ds') as ds:
        assert ds._client.requests == 3  # manifest, index page 0, shard table: never the whole index
        assert len(ds) == len(samples)
        for i in range(0, len(ds), 3):
            assert ds[i] == {'__key__': samples[i][0], **samples[i][1]}
        for key, members in samples[::11]:
            assert ds.get(key) == {'__key__': key, **members}
        keys = [k for k, _ in samples]
        assert list(ds.keys(prefix='a/')) == [k for k in keys if k.startswith('a/')]
        assert ds._client.connections_made == 1  # one keep-alive connection for every file
        assert not ds.mmap and ds._maps == {}  # mmap (the default) applies to local shards only
    index_bytes = os.path.getsize(os.path.join(d, 'index.skidx'))
    assert index_bytes > 4096


def test_missing_dataset_and_servers_that_refuse(served):
    nginx, _, _ = served
    cases = [(f'{nginx.url}/nothing-here', 'SHARDKIT_ERR_NOT_A_DATASET', {}),
             (f'{nginx.url}/norange/ds', 'SHARDKIT_ERR_HTTP', {}),
             (f'{nginx.url}/private/ds', 'SHARDKIT_ERR_HTTP', {}),
             (f'{nginx.url}/fail503/ds', 'SHARDKIT_ERR_HTTP', dict(retries=2, backoff=0.01))]
    for url, code, options in cases:
        with pytest.raises(shardkit.ShardkitError) as e:
            shardkit.open_dataset(url, **options)
        assert e.value.code == code, url
    with pytest.raises(shardkit.ShardkitError, match='ignores Range'):
        shardkit.open_dataset(f'{nginx.url}/norange/ds')
    with pytest.raises(shardkit.ShardkitError, match='401'):
        shardkit.open_dataset(f'{nginx.url}/private/ds')
    with pytest.raises(shardkit.ShardkitError, match='after 3 attempts: HTTP 503'):
        shardkit.open_dataset(f'{nginx.url}/fail503/ds', retries=2, backoff=0.01)
    log = [line for line in nginx.access_log() if '/fail503/ds/manifest.json' in line]
    assert len(log) >= 3


def test_custom_headers(served):
    nginx, _, samples = served
    with shardkit.open_dataset(f'{nginx.url}/private/ds', headers={'Authorization': 'Bearer py-token'}) as ds:
        assert ds[len(ds) - 1]['__key__'] == samples[-1][0]


def test_replaced_and_truncated_shards(served):
    nginx, d, samples = served
    replaced, url = copy_served(nginx, d, 'replaced')
    with shardkit.open_dataset(url) as ds:
        entry = ds.locate(samples[0][0])
        shard = os.path.join(replaced, ds.manifest['shards'][entry.shard]['file'])
        with open(shard, 'ab') as f:
            f.write(b'\0' * 1024)  # the file grew on the server: another file than the index describes
        with pytest.raises(shardkit.ShardkitError) as e:
            ds.get(samples[0][0])
        assert e.value.code == 'SHARDKIT_ERR_SHARD_MISMATCH'
    cut, url = copy_served(nginx, d, 'cut')
    with shardkit.open_dataset(url) as ds:
        last = ds.locate(len(ds) - 1)
        shard = os.path.join(cut, ds.manifest['shards'][last.shard]['file'])
        os.truncate(shard, last.offset + 1)
        with pytest.raises(shardkit.ShardkitError) as e:
            ds[len(ds) - 1]
        assert e.value.code == 'SHARDKIT_ERR_TRUNCATED'


def test_an_index_replaced_after_open(served):
    nginx, d, _ = served
    swapped, url = copy_served(nginx, d, 'swapped')
    with shardkit.open_dataset(url, page_cache_bytes=0) as ds:
        with open(os.path.join(swapped, 'index.skidx'), 'ab') as f:
            f.write(b'\0')
        with pytest.raises(shardkit.ShardkitError) as e:
            for i in range(len(ds)):
                ds[i]
        assert e.value.code == 'SHARDKIT_ERR_INDEX_MISMATCH'


def test_a_server_that_never_answers_times_out(tmp_dir):
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(8)
    held = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)  # accepted, never answered

    threading.Thread(target=accept, daemon=True).start()
    start = time.monotonic()
    with pytest.raises(shardkit.ShardkitError) as e:
        shardkit.open_dataset(f'http://127.0.0.1:{listener.getsockname()[1]}/ds', timeout=0.3, retries=1, backoff=0.01)
    assert e.value.code == 'SHARDKIT_ERR_HTTP' and 'timeout' in e.value.message
    assert time.monotonic() - start < 5
    listener.close()
    for c in held:
        c.close()


def test_a_forked_child_uses_its_own_connection(served):
    nginx, _, samples = served
    ctx = multiprocessing.get_context('fork')
    with shardkit.open_dataset(f'{nginx.url}/ds') as ds:
        ds[0]
        q = ctx.Queue()
        p = ctx.Process(target=read_in_child, args=(ds, list(range(0, 40)), q))
        p.start()
        status, got, new_connections, _, _ = q.get(timeout=60)
        p.join(60)
        assert status == 'ok', got
        assert new_connections == 1
        assert got == [digest({'__key__': samples[i][0], **samples[i][1]}) for i in range(40)]
        assert ds._client.connections_made == 1
        assert ds[len(ds) - 1]['__key__'] == samples[-1][0]  # the parent's socket was never touched by the child


def test_threads_get_a_connection_each(served):
    from concurrent.futures import ThreadPoolExecutor
    nginx, _, samples = served
    with shardkit.open_dataset(f'{nginx.url}/ds') as ds:
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda i: ds[i]['__key__'], range(len(ds))))
        assert got == [k for k, _ in samples]
        assert 2 <= ds._client.connections_made <= 5


def test_read_many_coalesces_range_requests(served):
    nginx, _, samples = served
    with shardkit.open_dataset(f'{nginx.url}/ds') as ds:
        ds[0]
        before = ds._client.requests
        got = ds.read_many(range(40, 100))
        assert got == [{'__key__': samples[i][0], **samples[i][1]} for i in range(40, 100)]
        shards = {ds.locate(i).shard for i in range(40, 100)}
        pages = 8  # at most: index pages for 60 positions of 1 KiB pages, and new shards' fingerprints
        assert ds._client.requests - before <= 2 * len(shards) + pages + 15 < 60


def test_a_shard_replaced_at_the_same_size_fails_by_its_etag(served):
    nginx, d, samples = served
    same, url = copy_served(nginx, d, 'same-size')
    with shardkit.open_dataset(url) as ds:
        first = ds.locate(0)
        ds[0]
        shard = os.path.join(same, ds.manifest['shards'][first.shard]['file'])
        st = os.stat(shard)
        os.utime(shard, (st.st_atime, st.st_mtime + 10))  # nginx's ETag is mtime and size: a new version
        nxt = next(i for i in range(1, len(ds)) if ds.locate(i).shard == first.shard and ds.locate(i).length)
        with pytest.raises(shardkit.ShardkitError) as e:
            ds[nxt]
        assert e.value.code == 'SHARDKIT_ERR_SHARD_MISMATCH' and 'ETag' in e.value.message


def test_https_with_a_cafile(served):
    nginx, _, samples = served
    with shardkit.open_dataset(f'{nginx.https_url}/ds', cafile=nginx.ca) as ds:
        assert ds.read_many([0, len(ds) - 1]) == [{'__key__': k, **m} for k, m in (samples[0], samples[-1])]
    start = time.monotonic()
    with pytest.raises(shardkit.ShardkitError) as e:
        shardkit.open_dataset(f'{nginx.https_url}/ds', backoff=1)
    assert e.value.code == 'SHARDKIT_ERR_HTTP' and 'cafile' in e.value.message
    assert time.monotonic() - start < 1  # not retried


def test_credentials_in_the_url_are_sent_as_basic_auth(served, tmp_dir):
    nginx, _, _ = served
    # nginx's /private/ wants a bearer token: a user:password URL is refused there with 401, and never shown
    with pytest.raises(shardkit.ShardkitError) as e:
        shardkit.open_dataset(f'http://someone:pa%40ss@127.0.0.1:{nginx.port}/private/ds?sig=secret')
    assert e.value.code == 'SHARDKIT_ERR_HTTP' and '401' in e.value.message
    assert 'pa@ss' not in str(e.value) and 'secret' not in str(e.value) and 'someone' not in str(e.value)
    with shardkit.open_dataset(f'http://someone:pw@127.0.0.1:{nginx.port}/ds') as ds:
        assert len(ds) > 0
