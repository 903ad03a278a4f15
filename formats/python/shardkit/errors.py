"""One exception class with a stable ``code``, as in the Node library (formats/errors.ts): match on ``e.code``.

>>> try:
...     ds.get('missing')
... except ShardkitError as e:
...     assert e.code == KEY_NOT_FOUND
"""
from typing import Optional

INVALID_ARG = 'SHARDKIT_ERR_INVALID_ARG'
NOT_A_DATASET = 'SHARDKIT_ERR_NOT_A_DATASET'
UNSUPPORTED_VERSION = 'SHARDKIT_ERR_UNSUPPORTED_VERSION'
BAD_MAGIC = 'SHARDKIT_ERR_BAD_MAGIC'
CORRUPT_INDEX = 'SHARDKIT_ERR_CORRUPT_INDEX'
TRUNCATED = 'SHARDKIT_ERR_TRUNCATED'
BAD_MANIFEST = 'SHARDKIT_ERR_BAD_MANIFEST'
INDEX_MISMATCH = 'SHARDKIT_ERR_INDEX_MISMATCH'
SHARD_MISSING = 'SHARDKIT_ERR_SHARD_MISSING'
SHARD_MISMATCH = 'SHARDKIT_ERR_SHARD_MISMATCH'
CORRUPT_SHARD = 'SHARDKIT_ERR_CORRUPT_SHARD'
CHECKSUM = 'SHARDKIT_ERR_CHECKSUM'
KEY_NOT_FOUND = 'SHARDKIT_ERR_KEY_NOT_FOUND'
OUT_OF_RANGE = 'SHARDKIT_ERR_OUT_OF_RANGE'
TOO_LARGE = 'SHARDKIT_ERR_TOO_LARGE'
UNSAFE_PATH = 'SHARDKIT_ERR_UNSAFE_PATH'
IO = 'SHARDKIT_ERR_IO'
HTTP = 'SHARDKIT_ERR_HTTP'
CLOSED = 'SHARDKIT_ERR_CLOSED'
MISSING_DEPENDENCY = 'SHARDKIT_ERR_MISSING_DEPENDENCY'
"""Python only: the dataset needs an optional package that is not installed (the message names it)."""


class ShardkitError(Exception):
    """A failure with a stable ``code`` (``SHARDKIT_ERR_*``) and a one-line message naming the file or key.

    ``file``, ``key``, ``shard`` and ``offset`` say where, when known.
    """

    def __init__(self, code: str, message: str, *, file: Optional[str] = None, key: Optional[str] = None,
                 shard: Optional[str] = None, offset: Optional[int] = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.file = file
        self.key = key
        self.shard = shard
        self.offset = offset

    def __str__(self) -> str:
        return f'{self.code}: {self.message}'

    def __reduce__(self):
        # picklable, so an error raised in a DataLoader worker reaches the main process whole
        return (_rebuild, (type(self), self.code, self.message, self.file, self.key, self.shard, self.offset))


def _rebuild(cls, code, message, file, key, shard, offset):
    return cls(code, message, file=file, key=key, shard=shard, offset=offset)


class ShardkitIndexError(ShardkitError, IndexError):
    """OUT_OF_RANGE: also an IndexError, so ``for s in ds`` and sequence protocols stop where they should."""


class ShardkitKeyError(ShardkitError, KeyError):
    """KEY_NOT_FOUND: also a KeyError, as a mapping's missing key is."""

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return ShardkitError.__str__(self)
