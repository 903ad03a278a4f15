"""Dataset: random access to a shardkit dataset in a directory or behind an http(s) URL (src/read/dataset.ts).

Opening costs three reads whatever the dataset's size (manifest, index header, shard table); a lookup walks the
B+-tree through a bounded cache of decoded pages (or, landing in a leaf a descent already reached, bisects the
tree's directories); a sample costs one slice of its shard's read-only memory map (``mmap=False``: one positional
read of its span, each shard opened once under a bounded LRU of handles). A shard's size and fingerprint are
checked when first used, and its size again whenever it is mapped.

This module holds the public API (options, lookups, ranges, pickling, closing); Dataset's other parts are
:class:`~shardkit.dataset_open.IndexAccess` (opening, index reads), :class:`~shardkit.sample_reads.SampleReads`
(records to samples, ``read_many``) and :class:`~shardkit.shard_reader.ShardReader` (shard bytes: maps, handles,
http, shard checks).
"""
import mmap as _mmap
import os
from bisect import bisect_right
from typing import Dict, Iterator, Optional

from .btree import DEFAULT_PAGE_CACHE_BYTES, BTree
from .checksum import crc32c, crc32c_iscsi
from .dataset_open import IndexAccess
from .errors import CLOSED, INVALID_ARG, KEY_NOT_FOUND, ShardkitError, ShardkitKeyError
from .file_source import DEFAULT_MAX_OPEN, HandlePool
from .index_page import Entry
from .key_range import range_bounds
from .location import is_remote, redact_location
from .sample_reads import _MAX_ISCSI_BYTES, SampleReads, _as_position
from .shard_reader import ShardReader, _http, _mapping

DEFAULT_MAX_MEMBER_BYTES = 1 << 30
_HTTP_OPTIONS = ('timeout', 'retries', 'backoff', 'max_backoff', 'headers', 'cafile')


def _check_int(name, value, lo, hi):
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ShardkitError(INVALID_ARG, f'Expected an integer between {lo} and {hi} for {name} but received {value!r}')
    return value


class Dataset(IndexAccess, SampleReads, ShardReader):
    """A shardkit dataset. Make one with :func:`open_dataset`.

    >>> with open_dataset('/data/imagenet.shards') as ds:
    ...     sample = ds[0]                # {'__key__': 'n01440764/x', 'jpg': b'...', 'cls': b'0'}
    ...     same = ds.get(sample['__key__'])

    Samples are dicts in WebDataset's shape: ``'__key__'`` and one ``bytes`` value per member extension. A Dataset
    is picklable and fork-safe: each process opens its own files and connections on first use.
    """

    def __init__(self, location: str, *, verify: bool = True, max_open_shards: int = DEFAULT_MAX_OPEN,
                 page_cache_bytes: int = DEFAULT_PAGE_CACHE_BYTES, max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
                 check_shards: str = 'fingerprint', mmap: bool = True, **http_options):
        if not isinstance(location, (str, os.PathLike)) or str(location) == '':
            raise ShardkitError(INVALID_ARG, f'Expected a dataset directory or URL but received {location!r}')
        location = os.fspath(location)
        if not isinstance(verify, bool):
            raise ShardkitError(INVALID_ARG, f'Expected a boolean for verify but received {verify!r}')
        if not isinstance(mmap, bool):
            raise ShardkitError(INVALID_ARG, f'Expected a boolean for mmap but received {mmap!r}')
        _check_int('max_open_shards', max_open_shards, 1, 65536)
        _check_int('page_cache_bytes', page_cache_bytes, 0, 2 ** 53 - 1)
        _check_int('max_member_bytes', max_member_bytes, 0, 2 ** 53 - 1)
        if check_shards not in ('size', 'fingerprint'):
            raise ShardkitError(INVALID_ARG, 'Expected "size" or "fingerprint" for check_shards but received '
                                f'{check_shards!r}')
        unknown = sorted(set(http_options) - set(_HTTP_OPTIONS))
        if unknown:
            raise ShardkitError(INVALID_ARG, f'Unknown option {unknown[0]!r}; options are verify, max_open_shards, '
                                f'page_cache_bytes, max_member_bytes, check_shards, mmap, {", ".join(_HTTP_OPTIONS)}')
        self.location = location
        self.verify = verify
        self.max_member_bytes = max_member_bytes
        self.check_shards = check_shards
        self._options = dict(verify=verify, max_open_shards=max_open_shards, page_cache_bytes=page_cache_bytes,
                             max_member_bytes=max_member_bytes, check_shards=check_shards, mmap=mmap,
                             **http_options)
        self._remote = is_remote(location)
        self.mmap = mmap and not self._remote
        """Local shards are read through memory maps (see :func:`open_dataset`)."""
        self._maps: Dict[int, _mmap.mmap] = {}
        """shard number -> its map (in this process; at most max_open_shards): the fast path of every read."""
        self._max_maps = max_open_shards
        self.maps_made = 0
        """Shards mapped by this process so far (a map dropped past max_open_shards is made again on next use)."""
        self._fast_limit = min(max_member_bytes, _MAX_ISCSI_BYTES)
        """Longer spans take the general path (TOO_LARGE, or a CRC computed in pieces)."""
        self._name = redact_location(location)
        self._client = _http().HttpClient(**http_options) if self._remote else None
        self._closed = False
        self._pool = HandlePool(max_open_shards)
        self._http_files: Dict[int, 'HttpFile'] = {}
        self._checked = set()
        self._index_fd: Optional[int] = None
        self._index_pid = os.getpid()
        try:
            self._open(page_cache_bytes)
        except BaseException:
            self.close()
            raise


    # -- pickling and fork safety ---------------------------------------------------------------------------------

    def __getstate__(self):
        # no descriptor, socket or cache travels: the receiving process opens its own on first use
        state = self.__dict__.copy()
        state['_pool'] = HandlePool(self._pool.max_open)
        state['_index_fd'] = None
        state['_http_files'] = {}
        state['_maps'] = {}
        state['maps_made'] = 0
        state['_tree'] = BTree(self._header, self._tree.file, None, self._tree.capacity * self._header.page_size)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.mmap:
            _mapping.add(self)
        self._tree.read_page = self._read_page
        if self._remote:
            self._index_http.client = self._client

    # -- the public API -----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._header.entry_count

    @property
    def shard_sizes(self):
        """Samples per shard, in shard order."""
        return [s.samples for s in self._shards]

    @property
    def identity(self) -> dict:
        """``{'index': manifest.index.crc32c, 'samples': n}``, as the Node loader's state records the dataset."""
        return {'index': self.manifest['index']['crc32c'], 'samples': len(self)}

    @property
    def layout(self) -> str:
        return self._header.layout

    def __getitem__(self, position):
        """The sample at ``position`` in key order (any integer type, numpy's too; negative positions count from
        the end), or a list of samples for a slice (read as :meth:`read_many` reads)."""
        if self._closed:
            self._assert_open()
        if type(position) is not int:
            if isinstance(position, slice):
                return self.read_many(range(*position.indices(len(self))))
            position = _as_position(position)
        if position < 0:
            n = self._header.entry_count
            if position + n >= 0:  # else leaf_at reports the position the caller gave
                position += n
        # the leaf: BTree.leaf_at's directory lookup, inline (this runs for every read)
        starts, leaves = self._tree.directory
        i = bisect_right(starts, position) - 1
        leaf = leaves[i] if i >= 0 else None
        if leaf is None or position - starts[i] >= len(leaf.keys):
            leaf, base = self._tree.leaf_at(position)
            slot = position - base
        else:
            slot = position - starts[i]
        # _read_record's fast path, inline: one stored member filling its span, in a mapped shard
        record = leaf.records[slot]
        m = self._maps.get(record[0])
        if m is not None and record[4] is not None:
            offset = record[1]
            end = offset + record[2]
            if end <= len(m) and end - offset <= self._fast_limit:
                span = m[offset:end]
                if self.verify and (crc32c_iscsi(span, end - offset, -1) ^ 0xFFFFFFFF if crc32c_iscsi is not None
                                    else crc32c(span)) != record[5]:
                    self._checksum_error(leaf.keys[slot], record[0], offset, record[3][0])
                return {'__key__': leaf.keys[slot], record[4]: span}
        return self._read_record(leaf, slot)

    def preload_index(self) -> bool:
        """Decodes every leaf of the index now, when the whole index fits ``page_cache_bytes`` (returns whether it
        did): positional reads then never decode or descend. Call it before forking worker processes (a
        DataLoader's), which then share the decoded leaves copy-on-write instead of each decoding them again.
        Costs about 2.7 µs per sample and 370 MiB per million samples, once: what reads touching every leaf would
        spend decoding."""
        self._assert_open()
        return self._tree.load_positions()

    def at(self, position: int) -> dict:
        """The sample at ``position`` (0 <= position < len(ds)), as Node's ``at``."""
        self._assert_open()
        leaf, base = self._tree.leaf_at(position)
        return self._read_record(leaf, position - base)

    def __iter__(self) -> Iterator[dict]:
        """Every sample in key order (one descent, then along the leaf chain)."""
        self._assert_open()
        for leaf, slot in self._tree.scan(0, len(self)):
            yield self._read_record(leaf, slot)

    _MISSING = object()

    def get(self, key: str, default=_MISSING) -> dict:
        """The sample with ``key``; KEY_NOT_FOUND (also a KeyError) when there is none, unless ``default`` is given."""
        if self._closed:
            self._assert_open()
        if type(key) is not str:
            self._find(key)  # INVALID_ARG (or a str subclass, looked up as a str)
        # the leaf: BTree.find's directory lookup, inline (this runs for every read by key)
        lows, entries = self._tree.key_directory
        i = bisect_right(lows, key) - 1
        slot = None
        if i >= 0:
            high, leaf, _ = entries[i]
            if high is None or key < high:
                slots = leaf.key_slots
                slot = (slots if slots is not None else self._tree.slots(leaf)).get(key)
            else:
                i = -1
        if i < 0:
            found = self._tree.find(key)
            if found is not None:
                leaf, slot = found[0], found[1]
        if slot is None:
            if default is not Dataset._MISSING:
                return default
            raise ShardkitKeyError(KEY_NOT_FOUND, f'no sample with key {_quote(key)} in {self._name}', key=key,
                                   file=self._name)
        # __getitem__'s fast path, inline
        record = leaf.records[slot]
        m = self._maps.get(record[0])
        if m is not None and record[4] is not None:
            offset = record[1]
            end = offset + record[2]
            if end <= len(m) and end - offset <= self._fast_limit:
                span = m[offset:end]
                if self.verify and (crc32c_iscsi(span, end - offset, -1) ^ 0xFFFFFFFF if crc32c_iscsi is not None
                                    else crc32c(span)) != record[5]:
                    self._checksum_error(key, record[0], offset, record[3][0])
                return {'__key__': leaf.keys[slot], record[4]: span}
        return self._read_record(leaf, slot)

    def __contains__(self, key) -> bool:
        self._assert_open()
        return self._find(key) is not None

    def position(self, key: str) -> int:
        """The position of ``key`` in key order (KEY_NOT_FOUND when absent)."""
        self._assert_open()
        found = self._find(key)
        if found is None:
            raise ShardkitKeyError(KEY_NOT_FOUND, f'no sample with key {_quote(key)} in {self._name}', key=key,
                                   file=self._name)
        return found[2]

    def locate(self, key_or_position) -> Entry:
        """Where a sample is: (key, shard number, span offset, span length, member tuples)."""
        self._assert_open()
        if isinstance(key_or_position, str):
            found = self._find(key_or_position)
            if found is None:
                raise ShardkitKeyError(KEY_NOT_FOUND, f'no sample with key {_quote(key_or_position)} in {self._name}',
                                       key=key_or_position, file=self._name)
            leaf, slot = found[0], found[1]
        else:
            leaf, base = self._tree.leaf_at(key_or_position)
            slot = key_or_position - base
        rec = leaf.records[slot]
        return Entry(leaf.keys[slot], rec[0], rec[1], rec[2], rec[3])

    def keys(self, prefix: Optional[str] = None, start: Optional[str] = None, end: Optional[str] = None,
             limit: Optional[int] = None, reverse: bool = False) -> Iterator[str]:
        """Keys with ``start <= key < end`` and the ``prefix``, in key order (``reverse``: from the last), lazily:
        forward along the leaf chain, backward one descent per leaf. ``limit`` caps how many."""
        for leaf, slot in self._range(prefix, start, end, limit, reverse):
            yield leaf.keys[slot]

    def items(self, prefix: Optional[str] = None, start: Optional[str] = None, end: Optional[str] = None,
              limit: Optional[int] = None, reverse: bool = False) -> Iterator[dict]:
        """Samples of the range of :meth:`keys`, in the same order."""
        for leaf, slot in self._range(prefix, start, end, limit, reverse):
            yield self._read_record(leaf, slot)

    def close(self) -> None:
        """Closes files and connections; further reads raise CLOSED. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._maps = {}  # each map is unmapped as soon as no read in progress uses it
        self._pool.close()
        if self._index_fd is not None and self._index_pid == os.getpid():
            os.close(self._index_fd)
        self._index_fd = None
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> 'Dataset':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f'<shardkit.Dataset {self._name!r} {len(self)} samples, {self.layout} layout>'

    # -- internals ------------------------------------------------------------------------------------------------

    def _assert_open(self):
        if self._closed:
            raise ShardkitError(CLOSED, f'dataset {self._name} is closed', file=self._name)

    def _find(self, key):
        if not isinstance(key, str):
            raise ShardkitError(INVALID_ARG, f'Expected a string for key but received {key!r}')
        return self._tree.find(key)

    def _range(self, prefix, start, end, limit, reverse=False):
        self._assert_open()
        if not isinstance(reverse, bool):
            raise ShardkitError(INVALID_ARG, f'Expected a boolean for reverse but received {reverse!r}')
        for name, v in (('prefix', prefix), ('start', start), ('end', end)):
            if v is not None and not isinstance(v, str):
                raise ShardkitError(INVALID_ARG, f'Expected a string for {name} but received {v!r}')
        if limit is not None:
            _check_int('limit', limit, 0, 2 ** 53 - 1)
        lo_key, hi_key = range_bounds(start, end, prefix)
        lo = 0 if lo_key is None else self._tree.lower_bound(lo_key)
        hi = len(self) if hi_key is None else self._tree.lower_bound(hi_key)
        if reverse:
            if limit is not None:
                lo = max(lo, hi - limit)
            return self._tree.scan_reverse(lo, hi)
        if limit is not None:
            hi = min(hi, lo + limit)
        return self._tree.scan(lo, hi)

def _quote(key) -> str:
    import json
    return json.dumps(key, ensure_ascii=False)


def open_dataset(path_or_url, **options) -> Dataset:
    """Opens the dataset at a directory path, a file:// URL or an http(s):// URL.

    Options: ``verify`` (check every member's CRC32C, default True), ``max_open_shards`` (64),
    ``page_cache_bytes`` (64 MiB of index pages), ``max_member_bytes`` (1 GiB), ``check_shards``
    ('fingerprint' or 'size'), ``mmap`` (True: local shards are read through read-only memory maps, one per shard
    in use, at most ``max_open_shards``; a shard truncated while mapped kills the process with SIGBUS, as under
    LMDB, so give ``mmap=False`` for files another program may truncate while they are read: ``os.pread`` then
    raises TRUNCATED), and for URLs ``timeout`` (seconds, 30), ``retries`` (4), ``backoff`` (0.1 s),
    ``max_backoff`` (10 s), ``headers`` (dict), ``cafile`` (PEM to trust for https).

    >>> ds = open_dataset('https://data.example/imagenet.shards', headers={'Authorization': 'Bearer ...'})
    """
    return Dataset(path_or_url, **options)
