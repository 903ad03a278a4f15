"""SampleReads: samples from the index's records, one at a time or many at once (src/read/sample-decode.ts,
src/read/batch-read.ts).

A record's span is checked against its shard and ``max_member_bytes``, read (ShardReader), then its members are
sliced, decompressed and verified against their CRC32C. ``read_many`` coalesces the spans of one shard that lie close
together into one read (or one Range request); through memory maps there is nothing to coalesce. A part of Dataset:
the attributes it uses are Dataset's (see ``Dataset.__init__``).
"""
import operator

from .checksum import crc32c, crc32c_iscsi
from .errors import CHECKSUM, CORRUPT_INDEX, INVALID_ARG, TOO_LARGE, ShardkitError
from .fetch_plan import (DEFAULT_COALESCE_GAP_BYTES, DEFAULT_LOCAL_COALESCE_GAP_BYTES, DEFAULT_MAX_READ_BYTES,
                         plan_reads)
from .index_layout import index_remedy
from .index_page import CODEC_LZ4, M_CODEC, M_CRC, M_EXT, M_OFFSET, M_SIZE, M_STORED
from .lz4frame import decompress_member

_MAX_ISCSI_BYTES = (1 << 31) - 1
"""The longest span ``crc32c_iscsi`` takes in one call."""


def _as_position(value) -> int:
    """An integer position from any integer type (numpy's, a one-element tensor's): INVALID_ARG otherwise."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ShardkitError(INVALID_ARG, f'Expected an integer for position but received {value!r}')


class SampleReads:
    """Dataset's sample reads and their errors (a mixin: Dataset is the only class made from it)."""

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
