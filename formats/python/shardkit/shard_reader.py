"""ShardReader: the bytes of a dataset's shards (src/read/shard-reader.ts).

Local shards are read through read-only memory maps, one per shard in use and at most ``max_open_shards`` (the
oldest dropped first); with ``mmap=False``, through positional reads, each shard opened once under a bounded
LRU of handles (file_source.HandlePool). Remote shards are read with Range requests, one HttpFile per
shard. A shard's size and fingerprint are checked when first used, and its size again whenever it is mapped. A
forked child drops the maps it inherited and maps its shards again on first use. A part of Dataset: the attributes
it sets and uses are Dataset's (see ``Dataset.__init__``).
"""
import mmap as _mmap
import os
import weakref
from typing import Optional

from .checksum import crc32c
from .errors import IO, SHARD_MISMATCH, TRUNCATED, ShardkitError
from .file_source import open_file, pread_exact
from .index_layout import FINGERPRINT_BYTES
from .packed_layout import PACKED_HEADER_BYTES, check_packed_header

_mapping: 'weakref.WeakSet' = weakref.WeakSet()
"""Datasets that may hold memory maps: a forked child drops its copies and maps its shards again on first use."""


def _after_fork_in_child():
    for ds in list(_mapping):
        ds._maps = {}
        ds.maps_made = 0


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _http():
    """The http(s) reader, imported on first use: local datasets never pay for http.client and ssl."""
    from . import http_source
    return http_source


class ShardReader:
    """Dataset's shard reads and shard checks (a mixin: Dataset is the only class made from it)."""

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
