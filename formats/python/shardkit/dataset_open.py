"""IndexAccess: what opening a :class:`~shardkit.dataset.Dataset` reads, and its index reads afterwards
(src/read/dataset-open.ts).

Opening costs three reads whatever the dataset's size: the manifest, the index's first page (its header) and the
shard table; the index must match the manifest. Index pages are then read on demand by the B+-tree: locally through
a descriptor of this process (a forked child opens its own and checks the index did not change), remotely through
one HttpFile. A part of Dataset: the attributes it sets and uses are Dataset's (see ``Dataset.__init__``).
"""
import os

from .btree import BTree
from .checksum import crc32c, crc32c_hex
from .errors import INDEX_MISMATCH, NOT_A_DATASET, SHARD_MISSING, TRUNCATED, ShardkitError
from .file_source import open_file, pread_exact
from .index_layout import DEFAULT_PAGE_SIZE, HEADER_BYTES, decode_index_header, decode_shard_table, index_remedy
from .location import redact_location, resolve_location
from .manifest import MANIFEST_FILE, parse_manifest
from .missing_manifest import no_manifest_message
from .shard_reader import _http, _mapping


class IndexAccess:
    """Dataset's opening and index reads (a mixin: Dataset is the only class made from it)."""

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
