"""A DataLoader worker's heap keeps freed memory for the next batch (shardkit.worker_heap, tune_worker_malloc).

The effect is measured in a new process of its own: page faults per batch, which glibc's default thresholds make a
process pay again for every batch of fresh bytes (counts that do not depend on the machine's speed or load). In a
DataLoader, the test is that the workers, and only they, take the setting: a forked worker's faults also depend on
its parent's heap history.
"""
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from conftest import write_dataset

glibc = pytest.mark.skipif(platform.libc_ver()[0] != 'glibc', reason='mallopt is glibc\'s')

BATCH_CYCLE = textwrap.dedent('''
    import resource, sys
    sys.path.insert(0, sys.argv[2])
    from shardkit.worker_heap import keep_freed_memory
    if sys.argv[1] == 'keep':
        assert keep_freed_memory() and keep_freed_memory()  # the second call: already done in this process
    def cycle():  # a batch of 64 samples of ~21 KB made, then freed
        batch = [bytes(21000 + i) for i in range(64)]
        del batch
    cycle()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        cycle()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50)
''')


def faults_per_batch(mode: str) -> float:
    package = os.path.join(os.path.dirname(__file__), '..')
    out = subprocess.run([sys.executable, '-c', BATCH_CYCLE, mode, package], capture_output=True, text=True,
                         check=True, timeout=120)
    return float(out.stdout)


@glibc
def test_a_process_that_keeps_freed_memory_does_not_fault_its_pages_in_again_batch_after_batch():
    assert faults_per_batch('keep') < 5
    assert faults_per_batch('default') > 100  # glibc's default: the freed batch goes back to the kernel


@pytest.fixture(scope='module')
def small_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp('heap') / 'ds'), [(f'k{i}', {'bin': bytes([i])}) for i in range(8)])


@glibc
@pytest.mark.parametrize('context', ['fork', 'spawn'])
@pytest.mark.parametrize('tune', [True, False])
def test_the_dataloaders_workers_and_only_they_keep_freed_memory(small_dir, tune, context):
    pytest.importorskip('torch')
    from torch.utils.data import DataLoader

    from shardkit import worker_heap
    from shardkit.torch import ShardkitDataset
    from torch_workers import key_and_heap_kept
    data = ShardkitDataset(small_dir, key_and_heap_kept, tune_worker_malloc=tune)
    assert data[0] == ('k0', False)  # read in the main process first: forked workers must still see to their heap
    for batch_size in (None, 4):  # ds[i] and __getitems__
        loader = DataLoader(data, batch_size=batch_size, num_workers=2, collate_fn=list if batch_size else None,
                            multiprocessing_context=context, timeout=120)
        samples = [s for batch in loader for s in (batch if batch_size else [batch])]
        assert sorted(key for key, _ in samples) == [f'k{i}' for i in range(8)]
        assert {kept for _, kept in samples} == {tune}
    assert data[0] == ('k0', False) and worker_heap._tuned_pid != os.getpid()  # the main process is left alone


def test_tune_worker_malloc_is_a_boolean(small_dir):
    from shardkit.errors import ShardkitError
    from shardkit.torch import ShardkitDataset
    with pytest.raises(ShardkitError) as e:
        ShardkitDataset(small_dir, tune_worker_malloc=1)
    assert e.value.code == 'SHARDKIT_ERR_INVALID_ARG' and 'tune_worker_malloc' in str(e.value)
