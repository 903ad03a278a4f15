"""shardkit: read shardkit datasets from Python (the second implementation of formats/SPEC.md).

>>> import shardkit
>>> with shardkit.open_dataset('/data/train.shards') as ds:
...     print(len(ds), ds[0]['__key__'], ds.get('cat/001')['jpg'][:4])
"""
from .dataset import Dataset, open_dataset
from .epoch_plan import EpochPlan, merge_states
from .errors import ShardkitError

__version__ = '0.1.0'

__all__ = ['Dataset', 'EpochPlan', 'ShardkitError', 'merge_states', 'open_dataset', '__version__']
