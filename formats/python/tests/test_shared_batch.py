"""shardkit.shared_batch: a SharedBatch pickled by multiprocessing's ForkingPickler arrives equal, its bytes through
the sender's shared-memory ring; messages loaded in any order, rings that wrap or overflow (the pipe then), a pickle
loaded twice (refused, never wrong bytes), plain pickle (the list it is), and another process reading the ring."""
import multiprocessing
import os
import pickle
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardkit import shared_batch
from shardkit.errors import ShardkitError
from shardkit.shared_batch import SharedBatch

pytestmark = pytest.mark.skipif(shared_batch._ring_unavailable, reason='no memfd or /proc: batches use the pipe')



def dumps(obj) -> bytes:
    return bytes(multiprocessing.reduction.ForkingPickler.dumps(obj))


values = st.one_of(st.binary(max_size=300), st.integers(), st.text(max_size=5), st.none(),
                   st.lists(st.binary(max_size=20), max_size=2))
samples = st.one_of(
    st.dictionaries(st.text(max_size=6), values, max_size=4),
    st.binary(max_size=400),
    st.tuples(st.integers(), st.binary(max_size=10)))


@settings(max_examples=150)
@given(batches=st.lists(st.lists(samples, max_size=6), min_size=1, max_size=12),
       ring_bytes=st.sampled_from([64, 257, 1024, 4096, 1 << 16]), seed=st.integers(0, 2 ** 32 - 1))
def test_batches_arrive_equal_whatever_the_ring_size_and_the_order_they_are_loaded_in(batches, ring_bytes, seed):
    rng = random.Random(seed)
    pending = []  # pickled and not loaded yet: the ring must not reuse their room
    for batch in batches:
        pending.append((dumps(SharedBatch(batch, ring_bytes)), batch))
        while pending and rng.random() < 0.5:
            pickled, want = pending.pop(rng.randrange(len(pending)))
            got = pickle.loads(pickled)
            assert type(got) is list and got == want
            assert [type(x) for x in got] == [type(x) for x in want]
    rng.shuffle(pending)
    for pickled, want in pending:
        assert pickle.loads(pickled) == want


def test_bytes_go_through_the_ring_and_only_their_lengths_through_the_pickle():
    batch = SharedBatch([{'__key__': 'k/1', 'jpg': bytes(range(256)) * 400, 'cls': 3}, b'\x07' * 50_000])
    pickled = dumps(batch)
    assert len(pickled) < 1000 and b'_receive' in pickled
    assert pickle.loads(pickled) == list(batch)


def test_a_batch_larger_than_the_ring_or_its_free_room_goes_through_the_pickle():
    big = SharedBatch([b'a' * 5000], ring_bytes=4096)
    pickled = dumps(big)
    assert len(pickled) > 5000 and pickle.loads(pickled) == [b'a' * 5000]
    first = dumps(SharedBatch([b'b' * 3000], ring_bytes=4096))  # unread: its room stays taken
    second = dumps(SharedBatch([b'c' * 3000], ring_bytes=4096))
    assert len(first) < 1000 and len(second) > 3000
    assert pickle.loads(second) == [b'c' * 3000] and pickle.loads(first) == [b'b' * 3000]
    third = dumps(SharedBatch([b'd' * 3000], ring_bytes=4096))  # the room is free again
    assert len(third) < 1000 and pickle.loads(third) == [b'd' * 3000]


def test_a_pickle_loaded_twice_is_refused_not_read():
    pickled = dumps(SharedBatch([b'x' * 100, {'a': b'y' * 10}], ring_bytes=1024))
    assert pickle.loads(pickled) == [b'x' * 100, {'a': b'y' * 10}]
    with pytest.raises(ShardkitError) as e:
        pickle.loads(pickled)
    assert e.value.code == 'SHARDKIT_ERR_IO' and 'read already' in str(e.value)
    for i in range(20):  # the room is reused: the old pickle still refuses, newer ones read their own bytes
        fresh = SharedBatch([bytes([i]) * 100], ring_bytes=1024)
        assert pickle.loads(dumps(fresh)) == list(fresh)
        with pytest.raises(ShardkitError):
            pickle.loads(pickled)


def test_plain_pickle_keeps_the_list_and_no_reference_to_the_ring():
    batch = SharedBatch([{'__key__': 'k', 'bin': b'\x00\x01' * 1000}])
    pickled = pickle.dumps(batch)
    assert b'_receive' not in pickled and b'SharedBatch' not in pickled
    code = 'import pickle, sys; print(pickle.loads(sys.stdin.buffer.read()) == [{"__key__": "k", "bin": b"\\x00\\x01" * 1000}])'
    out = subprocess.run([sys.executable, '-c', code], input=pickled, capture_output=True, check=True)
    assert out.stdout.strip() == b'True'


def _send(conn, batches):
    for batch in batches:
        conn.send(SharedBatch(batch, 1 << 14))
    conn.recv()  # stays alive until the reader is done (it reads the rings of live processes)


@pytest.mark.parametrize('context', ['fork', 'spawn'])
def test_another_process_reads_the_senders_ring(context):
    rng = random.Random(3)
    batches = [[{'__key__': f'{b}/{i}', 'bin': rng.randbytes(rng.randint(0, 3000))} for i in range(8)]
               for b in range(40)]  # 40 batches of about 12 KB through a 16 KiB ring: it wraps, and overflows
    ctx = multiprocessing.get_context(context)
    reader, writer = ctx.Pipe()
    sender = ctx.Process(target=_send, args=(writer, batches))
    sender.start()
    try:
        got = [reader.recv() for _ in batches]
        reader.send('done')
    finally:
        sender.join(60)
    assert got == batches
    assert sender.exitcode == 0
    assert any(pid == sender.pid for pid, _ in shared_batch._attached)  # the ring was used, not only the pipe


def test_a_batch_from_a_process_that_is_gone_fails_with_io_not_wrong_bytes(tmp_path):
    receive, (pid, fd, token, *rest) = shared_batch._reduce_shared_batch(SharedBatch([b'z' * 100], ring_bytes=1024))
    # what the receiver meets when the sender's pid and descriptor now name another file: a plain file here
    other = tmp_path / 'other'
    other.write_bytes(b'\0' * 4096)
    other_fd = os.open(other, os.O_RDONLY)
    try:
        for forged in ((pid, other_fd, token, *rest), (pid, fd, os.urandom(len(token)), *rest)):
            with pytest.raises(ShardkitError) as e:
                receive(*forged)
            assert e.value.code == 'SHARDKIT_ERR_IO' and 'exited before it arrived' in str(e.value)
    finally:
        os.close(other_fd)
    assert receive(pid, fd, token, *rest) == [b'z' * 100]
