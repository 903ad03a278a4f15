"""A batch of samples as one buffer: every member's bytes one after another, with offsets, so a batch crosses a
process boundary as a few objects, not one bytes object per member (``Dataset.read_packed``).

The layout, for a batch of ``n`` samples holding ``M`` members in all (``offsets`` and ``first`` are ``array('q')``):

- ``keys[j]``: sample ``j``'s key; ``exts[i]``: member ``i``'s extension;
- ``data[offsets[i]:offsets[i + 1]]``: member ``i``'s bytes (decompressed, verified);
- ``first[j] .. first[j + 1] - 1``: the members of sample ``j``, in the order a sample dict lists them.
"""
from array import array
from typing import Any, Callable, List, Optional, Tuple

from .checksum import crc32c
from .index_page import CODEC_NONE, M_CODEC, M_CRC, M_EXT, M_OFFSET, M_SIZE, M_STORED

Allocate = Callable[[int], Tuple[Any, memoryview]]
"""``allocate(n)`` -> (the buffer object to keep, a writable byte view of its ``n`` bytes)."""


def _bytearray(n: int) -> Tuple[Any, memoryview]:
    buf = bytearray(n)
    return buf, memoryview(buf)


class PackedBatch:
    """Samples packed in one buffer (see the module doc). ``batch[j]`` is sample ``j`` as a dict of WebDataset's
    shape whose values are slices of ``data`` (views, not copies: ``bytes(v)`` copies one out)."""

    __slots__ = ('keys', 'exts', 'data', 'offsets', 'first')

    def __init__(self, keys: List[str], exts: List[str], data: Any, offsets: array, first: array):
        self.keys = keys
        self.exts = exts
        self.data = data
        self.offsets = offsets
        self.first = first

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, j: int) -> dict:
        if j < 0:
            j += len(self.keys)
        if not 0 <= j < len(self.keys):
            raise IndexError(f'sample {j} is outside this batch of {len(self.keys)}')
        sample = {'__key__': self.keys[j]}
        offsets, data = self.offsets, self.data
        for i in range(self.first[j], self.first[j + 1]):
            sample[self.exts[i]] = data[offsets[i]:offsets[i + 1]]
        return sample

    def __iter__(self):
        return (self[j] for j in range(len(self.keys)))

    def __reduce__(self):
        return PackedBatch, (self.keys, self.exts, self.data, self.offsets, self.first)

    def __repr__(self) -> str:
        return f'<shardkit.PackedBatch {len(self.keys)} samples, {self.offsets[-1]} bytes>'


def read_packed(ds, located: list, allocate: Optional[Allocate] = None, samples: Optional[list] = None) -> PackedBatch:
    """The samples ``located`` ((key, record) pairs, checked by ``Dataset._locate``) packed in one buffer from
    ``allocate``: each member of a mapped shard copied once from the map into the buffer and its CRC32C checked
    there; other records (compressed) read as ``Dataset.read_many`` reads them, then copied. ``samples``: the
    samples already read (a dataset without maps reads them with ``read_many``'s coalesced reads)."""
    exts: List[str] = []
    sizes: List[int] = []
    first = array('q', [0])
    keys = []
    for key, record in located:
        keys.append(key)
        for m in record[3]:
            exts.append(m[M_EXT])
            sizes.append(m[M_SIZE])
        first.append(len(exts))
    offsets = array('q', [0])
    total = 0
    for size in sizes:
        total += size
        offsets.append(total)
    owner, out = (allocate or _bytearray)(total)
    if len(out) != total or out.readonly:
        raise ValueError(f'allocate({total}) must give a writable view of {total} bytes')
    crc_at = _crc_at(out)
    maps = ds._maps
    verify = ds.verify
    i = 0
    for j, (key, record) in enumerate(located):
        shard, offset, members = record[0], record[1], record[3]
        m = None
        if samples is None:
            m = maps.get(shard)
            if m is None and record[2] > 0:
                m = ds._map_shard(shard)
        if m is not None and all(member[M_CODEC] == CODEC_NONE for member in members):
            source = memoryview(m)
            try:
                for member in members:
                    start = offset + member[M_OFFSET]
                    at = offsets[i]
                    out[at:at + member[M_SIZE]] = source[start:start + member[M_STORED]]
                    if verify and crc_at(at, member[M_SIZE]) != member[M_CRC]:
                        ds._checksum_error(key, shard, offset, member)
                    i += 1
            finally:
                source.release()
            continue
        if samples is not None:
            sample = samples[j]
        else:
            sample = ds._decode(key, record, ds._read_span(shard, offset, record[2]) if record[2] else b'')
        for member in members:
            at = offsets[i]
            out[at:at + member[M_SIZE]] = sample[member[M_EXT]]
            i += 1
    return PackedBatch(keys, exts, owner, offsets, first)


def _crc_at(out: memoryview) -> Callable[[int, int], int]:
    """``crc_at(at, n)``: the CRC32C of ``out[at:at + n]``, read in place by ISA-L when it is loaded."""
    from . import checksum
    if checksum.crc32c_isal is not None:
        import ctypes
        iscsi = checksum.crc32c_iscsi_at
        base = ctypes.addressof(ctypes.c_char.from_buffer(out)) if len(out) else 0
        limit = checksum.ISAL_MAX_CALL_BYTES

        def crc_at(at: int, n: int) -> int:
            if n > limit:
                return crc32c(out[at:at + n])
            return iscsi(base + at, n, 0xFFFFFFFF) ^ 0xFFFFFFFF
        return crc_at
    return lambda at, n: crc32c(out[at:at + n])
