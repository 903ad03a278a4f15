"""Read coalescing (fetch_plan.py): every span's slice of its read equals reading it alone; runs are ordered, do not
overlap, and hold each request once (hypothesis)."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from shardkit.fetch_plan import plan_reads

requests = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5000), st.integers(0, 700)), max_size=40)


@settings(max_examples=400)
@given(requests, st.integers(0, 2000), st.integers(0, 4000), st.integers(0, 2 ** 32))
def test_slices_equal_reads_alone(reqs, gap, max_read, seed):
    data = random.Random(seed).randbytes(6000)
    shards = [data, data[::-1], bytes(reversed(data[:3000])) * 2]
    runs = plan_reads(reqs, gap, max_read)
    seen = []
    last = {}
    for run in runs:
        assert (run.shard, run.offset) >= last.get('pos', (-1, -1))
        if last.get('shard') == run.shard:
            assert run.offset >= last['end']  # runs of a shard do not overlap
        last = {'pos': (run.shard, run.offset), 'shard': run.shard, 'end': run.offset + run.length}
        read = shards[run.shard][run.offset:run.offset + run.length]
        for i, start, length in run.slices:
            s, offset, n = reqs[i]
            assert s == run.shard and length == n
            assert read[start:start + length] == shards[s][offset:offset + n]
            seen.append(i)
    assert sorted(seen) == list(range(len(reqs)))


def test_neighbours_join_and_far_spans_do_not():
    runs = plan_reads([(0, 1536, 100), (0, 0, 1000), (0, 100000, 10), (1, 0, 5)], 1024, 1 << 20)
    assert [(r.shard, r.offset, r.length, r.slices) for r in runs] == [
        (0, 0, 1636, [(1, 0, 1000), (0, 1536, 100)]), (0, 100000, 10, [(2, 0, 10)]), (1, 0, 5, [(3, 0, 5)])]
