"""shardkit.epoch_plan and its parts (prng, fisher_yates, shuffles, states): reference vectors, the SPEC's worked
example, and properties. Cross-language equality with Node is test/compat/python-epoch-plan.test.ts."""
import atexit
import json
import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

# No .hypothesis/ in the tree (no example database; its unicode cache in a temp dir), and no deadline: the
# machine is shared.
_hypothesis_home = tempfile.mkdtemp(prefix='shardkit-hypothesis-')
atexit.register(shutil.rmtree, _hypothesis_home, True)
set_hypothesis_home_dir(_hypothesis_home)
settings.register_profile('shardkit-plan', database=None, deadline=None)
settings.load_profile('shardkit-plan')

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from shardkit.epoch_plan import EpochPlan, merge_rank_states, merge_states  # noqa: E402
from shardkit.epoch_state import hash_shard_sizes  # noqa: E402
from shardkit.errors import ShardkitError  # noqa: E402
from shardkit.fisher_yates import fisher_yates  # noqa: E402
from shardkit.prng import (SplitMix64, Xoshiro128StarStar, fnv1a64_string, js_utf8, rng_for,  # noqa: E402
                           seed_for)
from shardkit.shuffle import SHUFFLES  # noqa: E402

BAD_STATE = 'SHARDKIT_ERR_BAD_STATE'
INVALID_ARG = 'SHARDKIT_ERR_INVALID_ARG'
SIZES = [3, 0, 4, 2]  # the SPEC's worked example

sizes_st = st.lists(st.integers(0, 25), max_size=12)
seed_st = st.one_of(st.integers(-(2 ** 53) + 1, 2 ** 53 - 1), st.text(max_size=8))
shuffle_st = st.sampled_from(sorted(SHUFFLES))


def code_of(fn):
    with pytest.raises(ShardkitError) as info:
        fn()
    return info.value.code


# --- PRNG: vectors of the reference C code (the same as test/unit/prng.test.ts) ---

def test_splitmix64_reference_outputs():
    sm = SplitMix64(1234567)
    assert [sm.next() for _ in range(5)] == [6457827717110365317, 3203168211198807973, 9817491932198370423,
                                             4593380528125082431, 16408922859458223821]
    sm = SplitMix64(0)
    assert [sm.next() for _ in range(3)] == [0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f]


def test_xoshiro128starstar_reference_outputs():
    rng = Xoshiro128StarStar(1, 2, 3, 4)
    assert [rng.next_uint32() for _ in range(10)] == [11520, 0, 5927040, 70819200, 2031721883, 1637235492,
                                                      1287239034, 3734860849, 3729100597, 4258142804]
    rng = Xoshiro128StarStar(0x964d4a0c, 0xd40ab895, 0xad7fdecb, 0x3006f0f0)
    assert [rng.next_uint32() for _ in range(4)] == [0xf1391922, 0x6fe53806, 0xa5be2840, 0xf510ee70]
    rng = Xoshiro128StarStar.from_seed(42)
    assert [rng.next_uint32() for _ in range(6)] == [1776835114, 4165204688, 17111135, 2317295270, 2792088233,
                                                     2554630222]
    with pytest.raises(ValueError):
        Xoshiro128StarStar(0, 0, 0, 0)


def test_fnv1a64_published_vectors():
    assert fnv1a64_string('') == 0xcbf29ce484222325
    assert fnv1a64_string('a') == 0xaf63dc4c8601ec8c
    assert fnv1a64_string('foobar') == 0x85944171f73967e8


def test_seed_vectors_of_the_spec():
    assert seed_for(42, 1, 'full') == 0xfb0f52af9f937fdc
    assert seed_for('imagenet', 1, 'full') == 0xf24c65d641ef6e26
    rng = rng_for(42, 1, 'full')
    assert [rng.next_uint32() for _ in range(4)] == [4093326504, 78374408, 507268606, 3453636030]
    assert seed_for(5, 0) != seed_for('5', 0)  # number and string seeds live in different domains
    assert seed_for(-1, 0) == seed_for(2 ** 64 - 1, 0)  # a negative seed is its two's complement


def test_strings_hash_as_javascript_utf16_strings():
    assert js_utf8('é😀') == 'é😀'.encode('utf-8')
    assert js_utf8('\ud83d\ude00') == '😀'.encode('utf-8')  # a surrogate pair is one character
    assert js_utf8('a\udc00b') == b'a\xef\xbf\xbdb'  # a lone surrogate is U+FFFD, as TextEncoder writes it


@given(st.integers(1, 2 ** 32), st.integers(1, 2 ** 64 - 1))
def test_next_below_is_lemire_in_exact_arithmetic(n, seed):
    rng = Xoshiro128StarStar.from_seed(seed)
    ref = Xoshiro128StarStar.from_seed(seed)
    m = ref.next_uint32() * n
    while (m & 0xFFFFFFFF) < (2 ** 32 - n) % n:
        m = ref.next_uint32() * n
    assert rng.next_below(n) == m >> 32
    assert rng.state == ref.state


@given(st.integers(2 ** 32 + 1, 2 ** 53), st.integers(1, 2 ** 64 - 1))
def test_next_below_wide_is_in_range(n, seed):
    assert 0 <= Xoshiro128StarStar.from_seed(seed).next_below(n) < n


@given(st.lists(st.integers(0, 2 ** 32 - 1), max_size=60), st.data(), st.integers(1, 2 ** 64 - 1))
def test_inlined_fisher_yates_equals_the_textbook_loop(values, data, seed):
    start = data.draw(st.integers(0, len(values)))
    end = data.draw(st.integers(start, len(values)))
    fast = list(values)
    rng = Xoshiro128StarStar.from_seed(seed)
    fisher_yates(fast, start, end, rng)
    slow = list(values)
    ref = Xoshiro128StarStar.from_seed(seed)
    for i in range(end - 1, start, -1):
        j = start + ref.next_below(i - start + 1)
        slow[i], slow[j] = slow[j], slow[i]
    assert fast == slow
    assert rng.state == ref.state  # block shares one generator across windows


# --- shuffles ---

@given(sizes_st, seed_st, st.integers(0, 50), shuffle_st, st.integers(1, 5))
def test_every_shuffle_is_a_deterministic_permutation(sizes, seed, epoch, name, window):
    order = SHUFFLES[name](sizes, seed, epoch, window)
    assert sorted(order) == list(range(sum(sizes)))
    assert list(order) == list(SHUFFLES[name](sizes, seed, epoch, window))


@given(sizes_st, seed_st, st.integers(0, 50), st.integers(1, 5))
def test_block_reads_windows_of_whole_shards(sizes, seed, epoch, window):
    order = SHUFFLES['block'](sizes, seed, epoch, window)
    shard_of = [s for s, size in enumerate(sizes) for _ in range(size)]
    seen = 0
    non_empty = sum(1 for size in sizes if size > 0)
    while seen < len(order):  # each window: exactly the samples of `window` shards (fewer at the end)
        shards = set()
        end = seen
        while end < len(order) and (len(shards) < window or shard_of[order[end]] in shards):
            shards.add(shard_of[order[end]])
            end += 1
        assert sum(sizes[s] for s in shards) == end - seen
        assert len(shards) == min(window, non_empty)
        non_empty -= len(shards)
        seen = end


def test_the_spec_worked_example():
    assert list(SHUFFLES['none'](SIZES, 42, 1, 0)) == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert list(SHUFFLES['full'](SIZES, 42, 1, 0)) == [6, 2, 5, 1, 3, 4, 7, 0, 8]
    assert list(SHUFFLES['block'](SIZES, 42, 1, 2)) == [3, 8, 4, 6, 7, 5, 1, 0, 2]
    plans = [EpochPlan(SIZES, seed=42, epoch=1, shuffle='full', rank=r, world_size=2, batch_size=2) for r in (0, 1)]
    assert [list(p.batches()) for p in plans] == [[[6, 5], [3, 7], [8]], [[2, 1], [4, 0], [6]]]
    assert plans[0].padding == 1
    state = plans[0].progress(4)
    assert json.dumps(state, separators=(',', ':')) == (
        '{"version":1,"seed":42,"epoch":1,"shuffle":"full","shuffleOptions":{},"samples":9,"shards":4,'
        '"shardSizesHash":"97ecde2c8e4e40e0","kind":"rank","rank":0,"worldSize":2,"start":{"consumed":0,"skip":[]},'
        '"length":5,"yielded":4}')
    merged = merge_states([plans[1].progress(2), state])
    assert (merged['kind'], merged['consumed'], merged['skip']) == ('epoch', 5, [6])
    assert list(EpochPlan(SIZES, seed=42, epoch=1, shuffle='full', resume_from=merged)) == [4, 0, 8]
    drop = [EpochPlan(SIZES, seed=42, epoch=1, shuffle='full', rank=r, world_size=2, batch_size=2,
                      partition='drop', drop_last=True) for r in (0, 1)]
    assert [list(p) for p in drop] == [[6, 5, 3, 7], [2, 1, 4, 0]]
    assert hash_shard_sizes(SIZES) == '97ecde2c8e4e40e0'


# --- the deal, batching, merge and resume ---

@given(sizes_st, seed_st, shuffle_st, st.integers(1, 7), st.sampled_from(['pad', 'drop']))
def test_the_ranks_share_the_epoch(sizes, seed, shuffle, world, partition):
    n = sum(sizes)
    plans = [EpochPlan(sizes, seed=seed, shuffle=shuffle, rank=r, world_size=world, partition=partition)
             for r in range(world)]
    read = sorted(p for plan in plans for p in plan)
    if partition == 'pad':
        assert all(len(p) == -(-n // world) for p in plans)
        assert set(read) == set(range(n)) and len(read) - n == plans[0].padding < world
    else:
        assert all(len(p) == n // world for p in plans)
        assert len(set(read)) == len(read) == n - n % world


@given(st.integers(0, 60), st.integers(1, 9), st.booleans(), st.integers(1, 4))
def test_batches_cut_the_rank_share(n, batch, drop_last, world):
    plan = EpochPlan([n], shuffle='full', seed=1, world_size=world, batch_size=batch, drop_last=drop_last)
    batches = list(plan.batches())
    assert len(batches) == plan.num_batches
    assert [p for b in batches for p in b] == list(plan)
    assert all(len(b) == batch for b in batches[:-1])
    if drop_last:
        assert len(plan) == (-(-n // world) // batch) * batch


@settings(max_examples=150)
@given(sizes_st, seed_st, shuffle_st, st.integers(1, 6), st.sampled_from(['pad', 'drop']),
       st.lists(st.integers(0, 10 ** 6), min_size=6, max_size=6), st.integers(1, 6), st.data())
def test_merged_states_resume_on_any_world_size_without_loss_or_repeat(sizes, seed, shuffle, world, partition,
                                                                       picks, new_world, data):
    n = sum(sizes)
    plans = [EpochPlan(sizes, seed=seed, shuffle=shuffle, rank=r, world_size=world, partition=partition)
             for r in range(world)]
    yielded = [picks[r] % (len(plans[r]) + 1) for r in range(world)]
    read = [plan.at(i) for plan, k in zip(plans, yielded) for i in range(k)
            if plan.rank + i * world < plan.remaining]  # padding repeats are not reads of the epoch
    merged = merge_states([plans[r].progress(yielded[r]) for r in data.draw(st.permutations(range(world)))])
    merged = json.loads(json.dumps(merged))  # a saved state
    rest = [p for r in range(new_world)
            for p in EpochPlan(sizes, seed=seed, shuffle=shuffle, rank=r, world_size=new_world, partition='drop',
                               resume_from=merged)]
    unread_by_drop = (n - len(read)) % new_world
    assert len(set(read + rest)) == len(read) + len(rest) == n - unread_by_drop
    if len(set(yielded)) == 1 and all(k < len(p) for k, p in zip(yielded, plans)):
        assert merged['skip'] == []  # a step boundary: the state stays small


def test_a_merged_state_merges_again_after_the_resume():
    sizes = [10, 7, 0, 12]
    first = [EpochPlan(sizes, seed='s', shuffle='block', rank=r, world_size=3) for r in range(3)]
    merged = merge_states([first[0].progress(5), first[1].progress(2), first[2].progress(4)])
    second = [EpochPlan(sizes, seed='s', shuffle='block', rank=r, world_size=2, resume_from=merged) for r in range(2)]
    again = merge_states([second[0].progress(3), second[1].progress(1)])
    third = EpochPlan(sizes, seed='s', shuffle='block', resume_from=again)
    read = ([first[0].at(i) for i in range(5)] + [first[1].at(i) for i in range(2)] + [first[2].at(i) for i in range(4)]
            + [second[0].at(i) for i in range(3)] + [second[1].at(0)] + list(third))
    assert sorted(read) == list(range(29))


# --- loader states and a Dataset source ---

class FakeIdentityDataset:
    """What EpochPlan reads of a Dataset: shard_sizes and identity."""
    shard_sizes = SIZES
    identity = {'index': '0a1b2c3d', 'samples': 9}


def test_loader_state_is_nodes_loader_state_json():
    plans = [EpochPlan(FakeIdentityDataset(), seed=42, epoch=1, shuffle='full', rank=r, world_size=2) for r in (0, 1)]
    state = plans[0].state(4)
    assert list(state) == ['format', 'version', 'dataset', 'progress']
    assert state['dataset'] == {'index': '0a1b2c3d', 'samples': 9}
    assert state['progress'] == plans[0].progress(4)
    merged = merge_states([plans[0].state(4), plans[1].state(2)])
    assert merged['progress']['consumed'] == 5
    assert list(EpochPlan(FakeIdentityDataset(), seed=42, epoch=1, shuffle='full', resume_from=merged)) == [4, 0, 8]
    foreign = dict(merged, dataset={'index': 'ffffffff', 'samples': 9})
    assert code_of(lambda: EpochPlan(FakeIdentityDataset(), seed=42, epoch=1, shuffle='full',
                                     resume_from=foreign)) == BAD_STATE
    # A Dataset's plan takes loader states only, as Node's loader does.
    assert code_of(lambda: EpochPlan(FakeIdentityDataset(), seed=42, epoch=1, shuffle='full',
                                     resume_from=merged['progress'])) == BAD_STATE
    assert code_of(lambda: EpochPlan(SIZES).state(0)) == INVALID_ARG


@pytest.mark.parametrize('kwargs', [
    {'seed': 2 ** 53}, {'seed': 1.5}, {'seed': True}, {'seed': None}, {'epoch': -1}, {'epoch': 2 ** 53},
    {'shuffle': 'random'}, {'window_shards': 2}, {'shuffle': 'block', 'window_shards': 0}, {'world_size': 0},
    {'rank': 2, 'world_size': 2}, {'partition': 'even'}, {'batch_size': 0}, {'batch_size': 2 ** 31},
    {'drop_last': 1},
])
def test_options_are_checked_at_the_boundary(kwargs):
    assert code_of(lambda: EpochPlan(SIZES, **kwargs)) == INVALID_ARG


def test_shard_sizes_are_checked():
    assert code_of(lambda: EpochPlan([1, -1])) == INVALID_ARG
    assert code_of(lambda: EpochPlan([1, 0.5])) == INVALID_ARG
    assert code_of(lambda: EpochPlan('12')) == INVALID_ARG
    assert code_of(lambda: EpochPlan([2 ** 32, 0])) == 'SHARDKIT_ERR_TOO_LARGE'


def test_integral_floats_are_integers_as_in_javascript():
    assert list(EpochPlan([4.0], seed=3.0, epoch=1.0, shuffle='full')) == list(EpochPlan([4], seed=3, epoch=1,
                                                                                        shuffle='full'))


def test_at_is_bounded_and_an_index_error():
    plan = EpochPlan([3])
    with pytest.raises(IndexError) as info:
        plan.at(3)
    assert info.value.code == 'SHARDKIT_ERR_OUT_OF_RANGE'
    assert [plan[i] for i in range(3)] == [0, 1, 2]


def test_a_rank_state_of_several_ranks_does_not_resume_alone():
    plan = EpochPlan(SIZES, rank=1, world_size=2)
    assert code_of(lambda: EpochPlan(SIZES, resume_from=plan.progress(1))) == BAD_STATE
    assert code_of(lambda: merge_rank_states([plan.progress(1)])) == BAD_STATE


def test_the_docstring_examples_run():
    import doctest

    from shardkit import epoch_plan, mixture_plan, prng, shuffle_block, shuffle_full, shuffle_none
    for module in (prng, shuffle_none, shuffle_full, shuffle_block, epoch_plan, mixture_plan):
        failed, tried = doctest.testmod(module, extraglobs={'EpochPlan': EpochPlan})
        assert failed == 0 and tried > 0, module.__name__


@given(sizes_st, seed_st, shuffle_st, st.integers(1, 5), st.lists(st.integers(0, 10 ** 6), min_size=5, max_size=5),
       st.integers(1, 5), st.sampled_from(['pad', 'drop']), st.data())
def test_samples_is_at_in_a_row_after_any_resume(sizes, seed, shuffle, world, picks, new_world, partition, data):
    plans = [EpochPlan(sizes, seed=seed, shuffle=shuffle, rank=r, world_size=world) for r in range(world)]
    merged = merge_states([p.progress(picks[p.rank] % (len(p) + 1)) for p in plans])
    rank = data.draw(st.integers(0, new_world - 1))
    plan = EpochPlan(sizes, seed=seed, shuffle=shuffle, rank=rank, world_size=new_world, partition=partition,
                     resume_from=merged)
    start = data.draw(st.integers(0, len(plan)))
    assert list(plan.samples(start)) == [plan.at(i) for i in range(start, len(plan))]
