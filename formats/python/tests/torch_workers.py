"""Module-level functions for test_torch.py's DataLoader workers (spawned workers pickle them by name)."""
import hashlib
import os


def key_and_digest(sample):
    """A transform: the key, the bytes' digest, and the reading process."""
    return sample['__key__'], hashlib.sha256(sample['bin']).hexdigest(), os.getpid()


def fail_on_key_7(sample):
    if sample['__key__'].endswith('07'):
        raise ValueError(f"transform refused {sample['__key__']}")
    return sample['__key__']


def keys_of(batch):
    """A collate: the keys of a batch of transformed samples (key, digest, pid)."""
    return [item[0] for item in batch]


def no_index_reads(page_no):
    """A BTree.read_page for a forked worker that must not read the index (its parent preloaded it)."""
    raise AssertionError(f'a worker read index page {page_no}')



def key_and_heap_kept(sample):
    """A transform: the key, and whether the reading process keeps freed memory (shardkit.worker_heap)."""
    from shardkit import worker_heap
    return sample['__key__'], worker_heap._tuned_pid == os.getpid()
