"""Dataset: random access to a shardkit dataset in a directory or behind an http(s) URL (src/read/dataset.ts).

Opening costs three reads whatever the dataset's size (manifest, index header, shard table); a lookup walks the
B+-tree through a bounded cache of decoded pages (or, landing in a leaf a descent already reached, bisects the
tree's directories); a sample costs one slice of its shard's read-only memory map (``mmap=False``: one positional
read of its span, each shard opened once under a bounded LRU of handles). A shard's size and fingerprint are
checked when first used, and its size again whenever it is mapped.
"""
import mmap as _mmap
import operator
import os
import weakref
from bisect import bisect_right
from typing import Dict, Iterator, Optional

from .btree import DEFAULT_PAGE_CACHE_BYTES, BTree
from .checksum import crc32c, crc32c_hex, crc32c_iscsi
from .errors import (CHECKSUM, CLOSED, CORRUPT_INDEX, INDEX_MISMATCH, INVALID_ARG, IO, KEY_NOT_FOUND, NOT_A_DATASET,
                     SHARD_MISMATCH, SHARD_MISSING, TOO_LARGE, TRUNCATED, ShardkitError, ShardkitKeyError)
from .fetch_plan import (DEFAULT_COALESCE_GAP_BYTES, DEFAULT_LOCAL_COALESCE_GAP_BYTES, DEFAULT_MAX_READ_BYTES,
                         plan_reads)
from .file_source import DEFAULT_MAX_OPEN, HandlePool, open_file, pread_exact
from .index_layout import (DEFAULT_PAGE_SIZE, FINGERPRINT_BYTES, HEADER_BYTES, decode_index_header,
                           decode_shard_table, index_remedy)
from .index_page import CODEC_LZ4, M_CODEC, M_CRC, M_EXT, M_OFFSET, M_SIZE, M_STORED, Entry
from .missing_manifest import no_manifest_message
from .key_range import range_bounds
from .location import is_remote, redact_location, resolve_location
from .lz4frame import decompress_member
from .manifest import MANIFEST_FILE, parse_manifest
from .packed_layout import PACKED_HEADER_BYTES, check_packed_header

DEFAULT_MAX_MEMBER_BYTES = 1 << 30
_HTTP_OPTIONS = ('timeout', 'retries', 'backoff', 'max_backoff', 'headers', 'cafile')
_MAX_ISCSI_BYTES = (1 << 31) - 1
_mapping: 'weakref.WeakSet[Dataset]' = weakref.WeakSet()
"""Datasets that may hold memory maps: a forked child drops its copies and maps its shards again on first use."""


def _after_fork_in_child():
    for ds in list(_mapping):
        ds._maps = {}
        ds.maps_made = 0


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _check_int(name, value, lo, hi):
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ShardkitError(INVALID_ARG, f'Expected an integer between {lo} and {hi} for {name} but received {value!r}')
    return value


class Dataset:
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

    # -- opening ------------------------------------------------------------------------------------------------

    def _open(self, page_cache_bytes: int):
        manifest_location = resolve_location(self.location, MANIFEST_FILE)
        try:
            data = _http().read_all(manifest_location, self._client) if self._remote else self._read_local(manifest_location)
        except ShardkitError as err:
            if err.code != SHARD_MISSING:
                raise
            raise ShardkitError(NOT_A_DATASET, no_manifest_message(self.location), file=self._name) from None
        self.manifest: dict = parse_manifest(data, redact_location(manifest_location))
        """The parsed manifest.json."""
        m = self.manifest
        self._index_location = resolve_location(self.location, m['index']['file'])
        index_name = redact_location(self._index_location)
        if self._remote:
            self._index_http = _http().HttpFile(self._index_location, self._client, int(m['index']['bytes']), INDEX_MISMATCH)
            size = self._index_http.size()
            first = self._index_http.read(0, min(size, DEFAULT_PAGE_SIZE)) if size >= HEADER_BYTES else b''
        else:
            try:
                fd, size = open_file(self._index_location)
            except ShardkitError as err:
                if err.code != SHARD_MISSING:
                    raise
                raise ShardkitError(TRUNCATED, f'{self._index_location}: the index file is missing; '
                                    f'{index_remedy(m["layout"])}', file=self._index_location) from None
            self._index_fd = fd
            first = pread_exact(fd, 0, min(size, DEFAULT_PAGE_SIZE), index_name) if size >= HEADER_BYTES else b''
        if size < HEADER_BYTES:
            raise ShardkitError(TRUNCATED, f'{index_name}: index is {size} bytes, shorter than its header',
                                file=index_name)
        header = decode_index_header(first, index_name, size)
        table = self._read_index(header.table_offset, header.table_length)
        self._shards = decode_shard_table(table, header, index_name)
        self._check_index_matches_manifest(header)
        self._tree = BTree(header, index_name, self._read_page, page_cache_bytes)
        self._shard_locations = [resolve_location(self.location, s.file) for s in self._shards]
        self._shard_bytes = [s.bytes for s in self._shards]
        if self.mmap:
            _mapping.add(self)

    def _read_local(self, path: str) -> bytes:
        fd, size = open_file(path)
        try:
            return pread_exact(fd, 0, size, path)
        finally:
            os.close(fd)

    def _check_index_matches_manifest(self, header):
        m = self.manifest

        def mismatch(why):
            raise ShardkitError(INDEX_MISMATCH, f'{self._name}: the index does not belong to this manifest ({why}); '
                                f'{index_remedy(m["layout"])}', file=self._name)

        if crc32c_hex(header.crc) != m['index']['crc32c']:
            mismatch('header checksum differs')
        if header.layout != m['layout']:
            mismatch('layout differs')
        if header.entry_count != m['totals']['samples']:
            mismatch('sample count differs')
        if len(self._shards) != len(m['shards']):
            mismatch('shard count differs')
        for i, (s, ms) in enumerate(zip(self._shards, m['shards'])):
            if (ms['file'] != s.file or ms['bytes'] != s.bytes or ms['samples'] != s.samples
                    or ms['crc32c'] != crc32c_hex(s.crc32c)):
                mismatch(f'shard {i} differs')
        self._header = header

    def _index_descriptor(self) -> int:
        """The index's descriptor in this process: a child opens its own, and checks it is still the same index."""
        if self._index_fd is not None and self._index_pid == os.getpid():
            return self._index_fd
        fd, size = open_file(self._index_location)
        head = pread_exact(fd, 0, HEADER_BYTES, self._tree.file) if size >= HEADER_BYTES else b''
        h = self._header
        if size != h.table_offset + h.table_length or crc32c(head[:124]) != h.crc:
            os.close(fd)
            raise ShardkitError(INDEX_MISMATCH, f'{self._tree.file}: the index changed since the dataset was opened; '
                                'open the dataset again', file=self._tree.file)
        self._index_fd, self._index_pid = fd, os.getpid()
        return fd

    def _read_index(self, offset: int, length: int) -> bytes:
        if self._remote:
            return self._index_http.read(offset, length)
        return pread_exact(self._index_descriptor(), offset, length, redact_location(self._index_location))

    def _read_page(self, page_no: int) -> bytes:
        size = self._header.page_size
        return self._read_index(page_no * size, size)

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

    def _read_record(self, leaf, slot) -> dict:
        record = leaf.records[slot]
        key = leaf.keys[slot]
        shard, offset, length, _members, lone_ext, lone_crc = record
        if (lone_ext is not None and length <= self.max_member_bytes and shard < len(self._shard_bytes)
                and offset + length <= self._shard_bytes[shard]):
            # the common record, one stored member filling its span, with _check_record's checks inline
            span = self._read_span(shard, offset, length) if length else b''
            if self.verify and (crc32c_iscsi(span, length, -1) ^ 0xFFFFFFFF if crc32c_iscsi is not None
                                and length <= _MAX_ISCSI_BYTES else crc32c(span)) != lone_crc:
                self._checksum_error(key, shard, offset, _members[0])
            return {'__key__': key, lone_ext: span}
        self._check_record(key, record)
        length = record[2]
        return self._decode(key, record, self._read_span(record[0], record[1], length) if length else b'')

    def _check_record(self, key, record):
        """The span inside its shard (CORRUPT_INDEX), no member over max_member_bytes (TOO_LARGE)."""
        shard, offset, length, members = record[0], record[1], record[2], record[3]
        shards = self._shards
        if shard >= len(shards) or offset + length > shards[shard].bytes:
            raise ShardkitError(CORRUPT_INDEX, f'{self._tree.file}: sample "{key}" points outside its shard; '
                                f'{index_remedy(self._header.layout)}', key=key)
        limit = self.max_member_bytes
        for m in members:
            if m[M_SIZE] > limit:
                self._too_large(key, m)

    def _decode(self, key, record, span: bytes) -> dict:
        """The sample from its span's bytes: members sliced, decompressed, verified."""
        shard, offset, length, members, lone_ext, lone_crc = record
        if lone_ext is not None:
            if self.verify and crc32c(span) != lone_crc:
                self._checksum_error(key, shard, offset, members[0])
            return {'__key__': key, lone_ext: span}
        sample = {'__key__': key}
        view = memoryview(span)
        for m in members:
            start = m[M_OFFSET]
            stored = view[start:start + m[M_STORED]]
            if m[M_CODEC] == CODEC_LZ4:
                data = decompress_member(stored, m[M_SIZE], lambda m=m: self._where(key, shard, offset, m))
            else:
                data = span if start == 0 and m[M_STORED] == length else bytes(stored)
            if self.verify and crc32c(data) != m[M_CRC]:
                self._checksum_error(key, shard, offset, m)
            sample[m[M_EXT]] = data
        return sample

    def read_many(self, positions) -> list:
        """The samples at ``positions`` (any order, repeats allowed), in that order, with reads coalesced: spans of
        one shard that lie close together (locally: neighbours; over http(s): up to 64 KiB apart) come in one read
        or one Range request of up to 1 MiB. Also ``ds.__getitems__``, which PyTorch's DataLoader uses for a batch."""
        self._assert_open()
        located = []
        n = self._header.entry_count
        leaf_at = self._tree.leaf_at
        limit = self.max_member_bytes
        shard_bytes = self._shard_bytes
        shard_count = len(shard_bytes)
        for p in positions:
            if type(p) is not int:
                p = _as_position(p)
            if p < 0 and p + n >= 0:
                p += n
            leaf, base = leaf_at(p)
            slot = p - base
            key, record = leaf.keys[slot], leaf.records[slot]
            # _check_record, inline for the one-member record (its member's size is the span's length)
            if not (record[4] is not None and record[2] <= limit and record[0] < shard_count
                    and record[1] + record[2] <= shard_bytes[record[0]]):
                self._check_record(key, record)
            located.append((key, record))
        if self.mmap:
            return self._read_mapped(located)
        gap = DEFAULT_COALESCE_GAP_BYTES if self._remote else DEFAULT_LOCAL_COALESCE_GAP_BYTES
        runs = plan_reads([(r[0], r[1], r[2]) for _, r in located], gap, DEFAULT_MAX_READ_BYTES)
        out = [None] * len(located)
        verify = self.verify
        for run in runs:
            data = self._read_span(run.shard, run.offset, run.length) if run.length else b''
            slices = run.slices
            if len(slices) == 1:
                i = slices[0][0]
                key, record = located[i]
                lone_ext = record[4]
                if lone_ext is not None:  # _decode's first case, inline
                    if verify and crc32c(data) != record[5]:
                        self._checksum_error(key, record[0], record[1], record[3][0])
                    out[i] = {'__key__': key, lone_ext: data}
                else:
                    out[i] = self._decode(key, record, data)
                continue
            for i, start, length in slices:
                key, record = located[i]
                out[i] = self._decode(key, record, data[start:start + length])
        return out

    __getitems__ = read_many

    def _read_mapped(self, located: list) -> list:
        """read_many's reads through the maps: a slice of a map costs no system call, so there is nothing to
        coalesce (and neighbours sliced together would be copied twice)."""
        out = []
        maps = self._maps
        verify = self.verify
        iscsi = crc32c_iscsi
        for key, record in located:
            m = maps.get(record[0])
            if m is not None and record[4] is not None:  # __getitem__'s fast path (located checked the span)
                offset = record[1]
                span = m[offset:offset + record[2]]
                if verify and (iscsi(span, record[2], -1) ^ 0xFFFFFFFF if iscsi is not None
                               and record[2] <= _MAX_ISCSI_BYTES else crc32c(span)) != record[5]:
                    self._checksum_error(key, record[0], offset, record[3][0])
                out.append({'__key__': key, record[4]: span})
            else:
                length = record[2]
                out.append(self._decode(key, record, self._read_span(record[0], record[1], length) if length else b''))
        return out

    def _read_span(self, shard: int, offset: int, length: int) -> bytes:
        if self._closed:
            self._assert_open()
        if self._remote:
            f = self._http_files.get(shard)
            if f is None or f.client is not self._client:
                f = _http().HttpFile(self._shard_locations[shard], self._client, self._shards[shard].bytes, SHARD_MISMATCH)
                self._check_remote_shard(shard, f)
                self._http_files[shard] = f
            return f.read(offset, length)
        if self.mmap:
            m = self._maps.get(shard)
            if m is None:
                m = self._map_shard(shard)
            if m is not None:
                return m[offset:offset + length]  # callers checked the span lies inside the shard (= the map)
        path = self._shard_locations[shard]
        return self._pool.pread(path, offset, length, lambda fd, size: self._check_local_shard(shard, fd, size))

    def _map_shard(self, shard: int) -> Optional[_mmap.mmap]:
        """The shard mapped read-only, after the checks of its first use (the size at every mapping): None for an
        empty shard (nothing to map). The oldest map is dropped past max_open_shards; a read using it holds its own
        reference, so it is unmapped only when no read uses it."""
        rec = self._shards[shard]
        if rec.bytes == 0:
            return None
        path = self._shard_locations[shard]
        fd, size = open_file(path)
        try:
            if size != rec.bytes:
                self._checked.discard(shard)  # reports TRUNCATED or SHARD_MISMATCH
            self._check_local_shard(shard, fd, size)
            try:
                m = _mmap.mmap(fd, 0, access=_mmap.ACCESS_READ)
            except (OSError, ValueError) as err:
                raise ShardkitError(IO, f'Cannot map {path}: {err}; open the dataset with mmap=False', file=path) from None
        finally:
            os.close(fd)  # the map keeps its own
        if len(m) != rec.bytes:  # the file changed between fstat and mmap
            size = len(m)
            m.close()
            if size < rec.bytes:
                raise ShardkitError(TRUNCATED, f'{path}: shard is {size} bytes, the index says {rec.bytes}', file=path)
            raise self._shard_mismatch(path, rec, f'its size ({size} bytes)')
        self.maps_made += 1
        maps = self._maps
        while len(maps) >= self._max_maps:
            try:
                del maps[next(iter(maps))]
            except (KeyError, RuntimeError, StopIteration):  # another thread changed the maps meanwhile
                break
        if self._closed:
            m.close()
            self._assert_open()
        maps[shard] = m
        return m

    def _check_local_shard(self, shard: int, fd: int, size: int):
        if shard in self._checked:
            return
        rec = self._shards[shard]
        path = self._shard_locations[shard]
        if size != rec.bytes:
            if size < rec.bytes:
                raise ShardkitError(TRUNCATED, f'{path}: shard is {size} bytes, the index says {rec.bytes}', file=path)
            raise self._shard_mismatch(path, rec, f'its size ({size} bytes)')
        if self.check_shards == 'fingerprint':
            self._check_head(shard, pread_exact(fd, 0, min(rec.bytes, FINGERPRINT_BYTES), path), path)
        self._checked.add(shard)

    def _check_remote_shard(self, shard: int, f: 'HttpFile'):
        if shard in self._checked or self.check_shards == 'size':
            return  # the size is checked against every reply's Content-Range
        rec = self._shards[shard]
        self._check_head(shard, f.read(0, min(rec.bytes, FINGERPRINT_BYTES)), f.name)
        self._checked.add(shard)

    def _check_head(self, shard: int, head: bytes, name: str):
        rec = self._shards[shard]
        if crc32c(head) != rec.fingerprint:
            raise self._shard_mismatch(name, rec, 'its fingerprint')
        if self._header.layout == 'packed' and rec.bytes >= PACKED_HEADER_BYTES:
            check_packed_header(head, name)

    @staticmethod
    def _shard_mismatch(name, rec, what):
        return ShardkitError(SHARD_MISMATCH, f'{name}: {what} differs from what the index recorded; the shard was '
                             'replaced or damaged (run `shardkit verify`)', file=name, shard=rec.file)

    def _where(self, key, shard, offset, m):
        return (f'{self._name}: sample "{key}" member "{m[M_EXT]}" (shard {self._shards[shard].file}, offset '
                f'{offset + m[M_OFFSET]})')

    def _checksum_error(self, key, shard, offset, m):
        raise ShardkitError(CHECKSUM, f'{self._where(key, shard, offset, m)}: checksum mismatch, the stored bytes are '
                            'damaged; run `shardkit verify`', file=self._name, shard=self._shards[shard].file, key=key,
                            offset=offset + m[M_OFFSET])

    def _too_large(self, key, m):
        raise ShardkitError(TOO_LARGE, f'sample "{key}" member "{m[M_EXT]}" is {m[M_SIZE]} bytes, over max_member_bytes '
                            f'{self.max_member_bytes} (raise open_dataset\'s max_member_bytes for files that big)',
                            key=key)


def _as_position(value) -> int:
    """An integer position from any integer type (numpy's, a one-element tensor's): INVALID_ARG otherwise."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ShardkitError(INVALID_ARG, f'Expected an integer for position but received {value!r}')


def _http():
    """The http(s) reader, imported on first use: local datasets never pay for http.client and ssl."""
    from . import http_source
    return http_source


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
