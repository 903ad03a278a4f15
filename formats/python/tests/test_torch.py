"""shardkit.torch against a real torch.utils.data.DataLoader and the Node loader (tests/node_loader.mjs): two ranks,
two workers, fork and spawn, every sample exactly once per epoch in Node's order and batches; states equal to
Node's loader.state(), merged and resumed across languages and world sizes."""
import json
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip('torch')  # Debian's python3-torch; .ci/run installs it, so CI never skips
from torch.utils.data import DataLoader  # noqa: E402

from conftest import NODE, ROOT, _need, write_dataset  # noqa: E402
from shardkit import open_dataset  # noqa: E402
from shardkit.errors import ShardkitError  # noqa: E402
from shardkit.torch import EpochSampler, ShardkitDataset, ShardkitIterableDataset, list_collate  # noqa: E402
from torch_workers import fail_on_key_7, key_and_digest, keys_of, no_index_reads  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
N = 202  # even: two ranks share an epoch with no padding, so "exactly once" is exact
BATCH = 8
KEYS = [f's/{i:03d}' for i in range(N)]


@pytest.fixture(scope='module')
def dataset_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp('torch') / 'ds')
    samples = [(key, {'bin': bytes((i * 7 + j) & 0xFF for j in range(40 + (i * 131) % 700)), 'cls': b'%d' % (i % 5)})
               for i, key in enumerate(KEYS)]
    write_dataset(directory, samples, shardBytes=8192)  # ~20 shards
    return directory


def node_loader(request):
    _need(NODE is not None and os.path.exists(os.path.join(ROOT, 'dist', 'src', 'index.js')),
          'node and the built dist/ are needed: run npm run build')
    out = subprocess.run([NODE, os.path.join(HERE, 'node_loader.mjs')], input=json.dumps(request).encode(),
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return json.loads(out.stdout)


def node_options(**o):
    names = {'window_shards': 'windowShards', 'world_size': 'worldSize', 'batch_size': 'batchSize',
             'drop_last': 'dropLast', 'resume_from': 'resumeFrom'}
    return {names.get(k, k): v for k, v in o.items()}


@pytest.mark.parametrize('context', ['fork', 'spawn'])
def test_two_ranks_two_workers_read_every_sample_once_per_epoch_in_nodes_order(dataset_dir, context):
    data = ShardkitDataset(dataset_dir, transform=key_and_digest)
    options = dict(seed='torch', shuffle='block', window_shards=3, batch_size=BATCH)
    epochs = {0: [], 1: []}
    for rank in (0, 1):
        sampler = EpochSampler(data, rank=rank, world_size=2, **options)
        loader = DataLoader(data, batch_size=BATCH, sampler=sampler, num_workers=2, collate_fn=list_collate,
                            multiprocessing_context=context, persistent_workers=True, timeout=120)
        for epoch in (0, 1):
            sampler.set_epoch(epoch)
            batches = list(loader)
            assert {pid for batch in batches for _, _, pid in batch} - {os.getpid()}, 'workers did the reading'
            keys = [[key for key, _, _ in batch] for batch in batches]
            node = node_loader({'dir': dataset_dir,
                                'options': node_options(rank=rank, world_size=2, epoch=epoch, **options)})
            assert keys == node['batches']
            epochs[epoch] += [key for batch in keys for key in batch]
    for epoch, seen in epochs.items():
        assert sorted(seen) == KEYS  # every sample exactly once
    assert epochs[0] != epochs[1]  # each epoch its own order


def test_states_are_nodes_and_resume_across_languages_on_another_world_size(dataset_dir):
    data = ShardkitDataset(dataset_dir, transform=key_and_digest)
    options = dict(seed=11, shuffle='full', batch_size=BATCH, epoch=2)
    read, states, node_states = [], [], []
    for rank, steps in ((0, 3), (1, 5)):  # the ranks stop at different steps
        sampler = EpochSampler(data, rank=rank, world_size=2, **options)
        for step, batch in enumerate(DataLoader(data, batch_size=BATCH, sampler=sampler, collate_fn=list_collate)):
            read += [key for key, _, _ in batch]
            if step + 1 == steps:
                break
        states.append(sampler.state_dict())  # num_workers=0: the indices handed out were consumed
        assert sampler.state_dict(steps * BATCH) == states[-1]
        node = node_loader({'dir': dataset_dir, 'options': node_options(rank=rank, world_size=2, **options)})
        node_states.append(node['states'][steps - 1])
        assert json.dumps(states[-1]['state']) == json.dumps(node_states[-1])  # the same JSON, key order included
        assert len(json.dumps(states[-1])) < 1024  # small enough to save every step
    merged = EpochSampler.merge_state_dicts(states)
    assert merged['state'] == node_loader({'merge': node_states})
    assert merged['state']['progress']['skip'] != []  # rank 1 ran ahead: its extra samples are listed

    # Resume on three ranks: Python from the merged state, Node from the same JSON.
    after = []
    for rank in range(3):
        sampler = EpochSampler(data, rank=rank, world_size=3, seed=11, shuffle='full', batch_size=BATCH)
        sampler.load_state_dict(json.loads(json.dumps(merged)))
        assert sampler.epoch == 2
        keys = [[key for key, _, _ in b] for b in DataLoader(data, batch_size=BATCH, sampler=sampler,
                                                              collate_fn=list_collate)]
        node = node_loader({'dir': dataset_dir, 'options': node_options(
            rank=rank, world_size=3, seed=11, shuffle='full', batch_size=BATCH, epoch=2,
            resume_from=merged['state'])})
        assert keys == node['batches']
        after += [key for batch in keys for key in batch]
    padding = sampler.plan.padding
    assert sorted(set(read + after)) == KEYS and len(read) + len(after) == N + padding


def test_global_state_is_the_merge_of_ranks_in_lockstep(dataset_dir):
    samplers = [EpochSampler(dataset_dir, rank=r, world_size=2, shuffle='block', seed=5, batch_size=BATCH)
                for r in (0, 1)]
    merged = EpochSampler.merge_state_dicts([s.state_dict(4 * BATCH) for s in samplers])
    assert samplers[0].global_state_dict(4 * BATCH) == merged == samplers[1].global_state_dict(4 * BATCH)
    assert merged['state']['progress']['consumed'] == 2 * 4 * BATCH and merged['state']['progress']['skip'] == []
    one = EpochSampler(dataset_dir, shuffle='block', seed=5, batch_size=BATCH)
    one.load_state_dict(merged)
    done = {samplers[r].plan.at(i) for r in (0, 1) for i in range(4 * BATCH)}
    assert len(one) == N - 64 and done.isdisjoint(one) and done | set(one) == set(range(N))


def test_load_state_dict_refuses_foreign_states_and_keeps_its_own(dataset_dir):
    sampler = EpochSampler(dataset_dir, rank=0, world_size=2, shuffle='full', seed=1)
    per_rank = sampler.state_dict(10)
    one = EpochSampler(dataset_dir, shuffle='full', seed=1)
    for bad in (per_rank,  # one rank of two: merge first
                EpochSampler(dataset_dir, shuffle='full', seed=2).state_dict(10),  # another seed
                dict(per_rank, state=dict(per_rank['state'], dataset={'index': '00000000', 'samples': N})),
                {'state': per_rank['state']}):
        with pytest.raises(ShardkitError) as info:
            one.load_state_dict(bad)
        assert info.value.code == 'SHARDKIT_ERR_BAD_STATE'
        assert len(one) == N and one.epoch == 0


@pytest.mark.filterwarnings('ignore:This DataLoader will create')  # 3 workers on 2 cores: an uneven deal on purpose
@pytest.mark.parametrize('context,workers,read_ahead', [('fork', 3, 2), ('spawn', 2, 1), (None, 0, 2), (None, 0, 0)])
def test_iterable_dataset_deals_batches_to_workers_in_order(dataset_dir, context, workers, read_ahead):
    seen = []
    for rank in (0, 1):
        data = ShardkitIterableDataset(dataset_dir, batch_size=BATCH, rank=rank, world_size=2, shuffle='full',
                                       seed='iter', epoch=1, transform=key_and_digest, collate=keys_of,
                                       read_ahead=read_ahead)
        loader = DataLoader(data, batch_size=None, num_workers=workers, timeout=120 if workers else 0,
                            **({'multiprocessing_context': context} if workers else {}))
        batches = list(loader)
        assert len(batches) == len(data)
        node = node_loader({'dir': dataset_dir, 'options': node_options(
            rank=rank, world_size=2, shuffle='full', seed='iter', epoch=1, batch_size=BATCH)})
        assert batches == node['batches']
        seen += [key for batch in batches for key in batch]
    assert sorted(seen) == KEYS


def test_iterable_dataset_resumes_from_a_merged_state(dataset_dir):
    options = dict(batch_size=BATCH, shuffle='block', seed=9, collate=keys_of, transform=key_and_digest)
    first = [ShardkitIterableDataset(dataset_dir, rank=r, world_size=2, **options) for r in (0, 1)]
    read = [key for r in (0, 1) for batch in list(DataLoader(first[r], batch_size=None))[:6] for key in batch]
    merged = ShardkitIterableDataset.merge_state_dicts([d.state_dict(6 * BATCH) for d in first])
    rest = ShardkitIterableDataset(dataset_dir, **options)
    rest.load_state_dict(merged)
    after = [key for batch in DataLoader(rest, batch_size=None, num_workers=2, timeout=120) for key in batch]
    assert sorted(read + after) == KEYS


def test_a_failing_worker_fails_the_loader_instead_of_hanging(dataset_dir):
    data = ShardkitDataset(dataset_dir, transform=fail_on_key_7)
    loader = DataLoader(data, batch_size=4, num_workers=2, collate_fn=list_collate, timeout=120)
    with pytest.raises(ValueError, match='transform refused s/007'):
        list(loader)
    iterable = ShardkitIterableDataset(dataset_dir, batch_size=4, transform=fail_on_key_7)
    with pytest.raises(ValueError, match='transform refused s/007'):
        list(DataLoader(iterable, batch_size=None, num_workers=2, timeout=120))


def test_stopping_early_ends_the_read_ahead_thread(dataset_dir):
    before = set(threading.enumerate())
    data = ShardkitIterableDataset(dataset_dir, batch_size=2, read_ahead=3)
    batches = iter(data)
    next(batches)
    mine = [t for t in set(threading.enumerate()) - before if t.name == 'shardkit-read-ahead']
    assert len(mine) == 1 and mine[0].is_alive()
    batches.close()
    mine[0].join(timeout=30)
    assert not mine[0].is_alive()


def test_map_style_dataset_over_an_open_dataset_and_its_checks(dataset_dir):
    with open_dataset(dataset_dir) as ds:
        data = ShardkitDataset(ds)
        assert len(data) == N and data[5]['__key__'] == 's/005'
        assert data.__getitems__([9, 2, 9]) == [ds[9], ds[2], ds[9]]
        keyed = ShardkitDataset(ds, transform=key_and_digest)
        assert [k for k, _, _ in keyed.__getitems__([4, 1])] == ['s/004', 's/001']
        keys = [s['__key__'] for b in DataLoader(data, batch_size=50, num_workers=2, collate_fn=list_collate,
                                                  timeout=120) for s in b]
        assert keys == KEYS
        with pytest.raises(ShardkitError):
            ShardkitDataset(ds, verify=False)  # open options go to open_dataset
    with pytest.raises(ShardkitError):
        ShardkitDataset(42)
    with pytest.raises(ShardkitError) as info:
        EpochSampler(dataset_dir, shuffle='random')
    assert info.value.code == 'SHARDKIT_ERR_INVALID_ARG'


def test_torch_is_imported_only_by_shardkit_torch():
    code = ('import sys, shardkit; shardkit.EpochPlan([3], shuffle="full"); assert "torch" not in sys.modules; '
            'import shardkit.torch; assert "torch" in sys.modules')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    subprocess.run([sys.executable, '-c', code], check=True, env=env, timeout=300)


@pytest.mark.parametrize('preload', [True, False])
def test_forked_workers_inherit_the_index_the_main_process_preloaded(dataset_dir, preload):
    data = ShardkitDataset(dataset_dir, transform=key_and_digest, preload_index=preload)
    assert len(data) == N  # the main process opens the dataset (and preloads its index) before the workers fork
    data.dataset._tree.read_page = no_index_reads  # what a worker inherits: any index read fails the epoch
    loader = DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=2, collate_fn=list_collate,
                        multiprocessing_context='fork', timeout=120)
    if not preload:
        with pytest.raises(AssertionError, match='a worker read index page'):
            list(loader)
        return
    batches = list(loader)
    assert sorted(key for batch in batches for key, _, _ in batch) == KEYS
    assert {pid for batch in batches for _, _, pid in batch} - {os.getpid()}, 'workers did the reading'


@pytest.mark.parametrize('context', ['fork', 'spawn'])
def test_shared_memory_batches_arrive_whole_in_nodes_order_and_through_the_workers_rings(dataset_dir, context):
    from shardkit import shared_batch
    if shared_batch._ring_unavailable:
        pytest.skip('no memfd or /proc: batches use the pipe')
    data = ShardkitDataset(dataset_dir, shared_memory=True)
    options = dict(seed=5, shuffle='full', batch_size=BATCH)
    sampler = EpochSampler(data, rank=1, world_size=2, **options)
    loader = DataLoader(data, batch_size=BATCH, sampler=sampler, num_workers=2, collate_fn=list_collate,
                        multiprocessing_context=context, timeout=120)
    with open_dataset(dataset_dir) as ds:
        want = {key: ds.get(key) for key in KEYS}
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        before = set(shared_batch._attached)
        batches = list(loader)
        rings = {pid for pid, _ in set(shared_batch._attached) - before}
        assert len(rings) == 2, 'each worker sent its batches through its own ring'
        assert all(type(batch) is list and all(type(s) is dict for s in batch) for batch in batches)
        assert [s for batch in batches for s in batch] == [want[s['__key__']] for batch in batches for s in batch]
        node = node_loader({'dir': dataset_dir, 'options': node_options(rank=1, world_size=2, epoch=epoch, **options)})
        assert [[s['__key__'] for s in batch] for batch in batches] == node['batches']
    assert data[3] == want[KEYS[3]]  # in the main process: a plain sample, no ring
    assert type(data.__getitems__([1, 2])) is list


def test_shared_memory_is_a_boolean(dataset_dir):
    with pytest.raises(ShardkitError) as e:
        ShardkitDataset(dataset_dir, shared_memory='yes')
    assert e.value.code == 'SHARDKIT_ERR_INVALID_ARG' and 'shared_memory' in str(e.value)


def test_iterable_dataset_sends_shared_memory_batches_in_the_plans_order(dataset_dir):
    from shardkit import shared_batch
    if shared_batch._ring_unavailable:
        pytest.skip('no memfd or /proc: batches use the pipe')
    data = ShardkitIterableDataset(dataset_dir, batch_size=BATCH, shuffle='full', seed='shm', shared_memory=True)
    before = set(shared_batch._attached)
    batches = list(DataLoader(data, batch_size=None, num_workers=2, timeout=120))
    assert len({pid for pid, _ in set(shared_batch._attached) - before}) == 2  # both workers' rings were used
    with open_dataset(dataset_dir) as ds:
        assert batches == [ds.read_many(positions) for positions in data.plan.batches()]
