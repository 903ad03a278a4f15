"""B+-tree pages (SPEC "Page header", "Branch record", "Leaf record"; formats/index-page.ts).

A page is decoded once into plain Python values and kept in the page cache: a leaf holds its keys and, per
record, one tuple ``(shard, offset, length, members, lone_ext, lone_crc)`` where ``members`` is a tuple of
``(ext, offset, size, stored_size, codec, crc32c)`` and ``lone_ext``/``lone_crc`` are set when the record is one
uncompressed member filling its span (the common case, read without a loop).
"""
import struct
from typing import List, NamedTuple, Optional

from .byte_reader import MAX_SAFE_INTEGER, MAX_VARINT_BYTES, ByteReader, unzigzag
from .checksum import crc32c
from .errors import CORRUPT_INDEX, ShardkitError
from .index_layout import index_remedy

PAGE_HEADER_BYTES = 16
# u8 type | u8 flags | u16 count | u32 crc (of [0, 4) then [8, pageSize)) | u32 pageNo | u32 link
PAGE_HEADER = struct.Struct('<BBHIII')
PAGE_CRC = 4
PAGE_NO = 8
PAGE_TYPE_BRANCH = 1
PAGE_TYPE_LEAF = 2

RECORD_SAME_SHARD = 0x01
"""shard = prev.shard"""
RECORD_CONTIGUOUS = 0x02
"""offset = prev.offset + prev.length (needs SAME_SHARD)"""
RECORD_SAME_SHAPE = 0x04
"""member count, and each member's ext, codec and gap, equal prev's"""
RECORD_KNOWN_FLAGS = RECORD_SAME_SHARD | RECORD_CONTIGUOUS | RECORD_SAME_SHAPE
MEMBER_CODEC_MASK = 0x0F
MEMBER_EXT_SAME = 0x10
MEMBER_KNOWN_FLAGS = MEMBER_CODEC_MASK | MEMBER_EXT_SAME
CODEC_NONE = 0
CODEC_LZ4 = 1
MIN_MEMBER_BYTES = 7
"""The fewest bytes a member's record takes: flags, gap and size (a byte each at least) and its CRC32C."""

# Indices into a record tuple and a member tuple.
R_SHARD, R_OFFSET, R_LENGTH, R_MEMBERS, R_LONE_EXT, R_LONE_CRC = range(6)
M_EXT, M_OFFSET, M_SIZE, M_STORED, M_CODEC, M_CRC = range(6)


class LeafPage:
    __slots__ = ('page_no', 'next', 'keys', 'records', 'key_slots')

    def __init__(self, page_no: int, next_leaf: int, keys: List[str], records: list):
        self.page_no = page_no
        self.next = next_leaf
        self.keys = keys
        self.records = records
        self.key_slots: Optional[dict] = None
        """key -> slot, built on the first key lookup that reaches this leaf."""

    is_leaf = True


class BranchPage:
    __slots__ = ('page_no', 'level', 'keys', 'children', 'starts')

    def __init__(self, page_no: int, level: int, keys: List[str], children: List[int], starts: List[int]):
        self.page_no = page_no
        self.level = level
        self.keys = keys
        self.children = children
        self.starts = starts
        """starts[i] = samples in children before i; starts[-1] = samples under this page."""

    is_leaf = False


class Entry(NamedTuple):
    """Where a sample is: its key, shard number, span and members (tuples, see the module doc)."""
    key: str
    shard: int
    offset: int
    length: int
    members: tuple


def page_checksum(page) -> int:
    return crc32c(page[PAGE_NO:], crc32c(page[:PAGE_CRC]))


def decode_page(page: bytes, expected_page_no: int, file: str, layout: Optional[str] = None):
    """Checks a page's checksum, number and type, then decodes its records (CORRUPT_INDEX on any damage)."""
    def corrupt(page_no, why):
        raise ShardkitError(CORRUPT_INDEX, f'{file}: page {page_no} {why}; {index_remedy(layout)}', file=file)

    if len(page) < PAGE_HEADER_BYTES:
        corrupt(expected_page_no, 'is truncated')
    page_type, _flags, count, crc, page_no, link = PAGE_HEADER.unpack_from(page, 0)
    if page_checksum(page) != crc:
        corrupt(expected_page_no, 'fails its checksum')
    if page_no != expected_page_no:
        corrupt(expected_page_no, f'says it is page {page_no}')
    r = ByteReader(page, CORRUPT_INDEX, f'{file}: page {page_no}', PAGE_HEADER_BYTES)
    if count == 0:
        corrupt(page_no, 'has no records')
    if page_type == PAGE_TYPE_LEAF:
        return _decode_leaf(r, page_no, link, count)
    if page_type == PAGE_TYPE_BRANCH:
        return _decode_branch(r, page_no, link, count)
    corrupt(page_no, f'has unknown type {page_type}')


def _decode_leaf(r: ByteReader, page_no: int, next_leaf: int, count: int) -> LeafPage:
    if next_leaf != 0 and next_leaf <= page_no:
        r.fail(f'links to earlier page {next_leaf}')
    keys = []
    records = []
    prev_key = b''
    prev = None
    data = r.data
    i = 0
    while i < count:
        if prev is not None and len(prev[4]) == 1:
            decoded, r.pos, prev_key, prev = _decode_same_shape_run(data, r.pos, r.end, prev_key, prev, keys, records,
                                                                    count - i)
            i += decoded
            if i == count:
                break
        key_bytes, record = decode_leaf_record(r, prev_key, prev, i)
        key = record[0]
        if i > 0 and keys[-1] >= key:  # str order is code point order, which is UTF-8 byte order
            r.fail(f'record {i} is out of key order')
        keys.append(key)
        records.append(record[1:])
        prev_key = key_bytes
        prev = record
        i += 1
    return LeafPage(page_no, next_leaf, keys, records)


def _decode_same_shape_run(data, pos: int, end: int, prev_key: bytes, prev, keys: list, records: list, most: int):
    """Up to ``most`` consecutive records like ``prev``, read without a ByteReader (the common leaf record: same
    shard and shape as the previous one, one member), appended to ``keys`` and ``records``: returns (how many, next
    position, last key's bytes, last record), each record as :func:`decode_leaf_record` gives it. It stops at the
    first record it does not take (another shape, keys of 128 bytes or more, malformed, out of key order), which the
    general decoder then decodes from that position (and names the problem). Index pages are decoded again in
    every DataLoader worker, every epoch without persistent workers: this loop is most of their decoding."""
    done = 0
    if len(prev[4]) != 1:
        return done, pos, prev_key, prev
    like = prev[4][0]
    codec = like[M_CODEC]
    ext = like[M_EXT]
    lone_ext = ext if codec == CODEC_NONE else None
    shard = prev[1]
    prev_end = prev[2] + prev[3]
    last_key = prev[0]
    record = prev
    unpack_u32 = _U32.unpack_from
    while done < most:
        at = pos
        if at + 2 > end:
            break
        shared = data[at]
        suffix_length = data[at + 1]
        if shared >= 0x80 or suffix_length >= 0x80:
            break
        at += 2
        if shared > len(prev_key) or at + suffix_length + 1 > end:
            break
        key_bytes = prev_key[:shared] + data[at:at + suffix_length]
        at += suffix_length
        try:
            key = key_bytes.decode('utf-8')
        except UnicodeDecodeError:
            break
        if key <= last_key:
            break
        flags = data[at]
        at += 1
        if flags == RECORD_SAME_SHARD | RECORD_CONTIGUOUS | RECORD_SAME_SHAPE:
            offset = prev_end
        elif flags == RECORD_SAME_SHARD | RECORD_SAME_SHAPE:
            # varints of one and two bytes inline (a tar member's gap), longer ones by _varint_at
            if at + 1 < end and data[at] < 0x80:
                gap = data[at]
                at += 1
            elif at + 2 < end and data[at + 1] < 0x80:
                gap = (data[at] & 0x7F) | (data[at + 1] << 7)
                at += 2
            else:
                gap, at = _varint_at(data, at, end)
                if gap < 0:
                    break
            offset = prev_end + (gap >> 1 if not gap & 1 else -((gap + 1) >> 1))
        else:
            break
        if offset < 0 or offset > MAX_SAFE_INTEGER:
            break
        # the size: three bytes or fewer inline (members under 2 MiB), longer ones by _varint_at
        if at + 3 < end and data[at] >= 0x80 and data[at + 1] >= 0x80 and data[at + 2] < 0x80:
            size = (data[at] & 0x7F) | (data[at + 1] & 0x7F) << 7 | data[at + 2] << 14
            at += 3
        elif at + 2 < end and data[at] >= 0x80 and data[at + 1] < 0x80:
            size = (data[at] & 0x7F) | data[at + 1] << 7
            at += 2
        else:
            size, at = _varint_at(data, at, end)
        stored = size
        if codec != CODEC_NONE:
            stored, at = _varint_at(data, at, end)
        if size < 0 or stored < 0 or at + 4 > end:
            break
        crc = unpack_u32(data, at)[0]
        rest = (shard, offset, stored, ((ext, 0, size, stored, codec, crc),), lone_ext,
                crc if lone_ext is not None else None)
        keys.append(key)
        records.append(rest)
        pos = at + 4
        prev_key = key_bytes
        last_key = key
        prev_end = offset + stored
        record = (key,) + rest
        done += 1
    return done, pos, prev_key, record


def _varint_at(data, pos: int, end: int):
    """(value, next position) of a well-formed varint at ``pos``; (-1, pos) when it is not one."""
    value = 0
    shift = 0
    for _ in range(MAX_VARINT_BYTES):
        if pos >= end:
            return -1, pos
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value, pos) if value <= MAX_SAFE_INTEGER else (-1, pos)
        shift += 7
    return -1, pos


_U32 = struct.Struct('<I')


def decode_leaf_record(r: ByteReader, prev_key: bytes, prev, i: int):
    """One leaf record at the reader's position, relative to ``prev`` (None for a page's first record): returns
    (key bytes, (key, shard, offset, length, members, lone_ext, lone_crc))."""
    shared = r.varint()
    suffix_length = r.varint()
    if shared > len(prev_key):
        r.fail(f'record {i} shares more key bytes than the previous key has')
    key_bytes = prev_key[:shared] + r.take(suffix_length)
    try:
        key = key_bytes.decode('utf-8')
    except UnicodeDecodeError:
        r.fail(f'record {i} has a key that is not UTF-8')
    flags = r.u8()
    if flags & ~RECORD_KNOWN_FLAGS:
        r.fail(f'record {i} has unknown flags {flags}')
    if prev is None and flags != 0:
        r.fail(f'record {i} refers to a previous record the page does not have')
    if flags & RECORD_CONTIGUOUS and not flags & RECORD_SAME_SHARD:
        r.fail(f'record {i} is contiguous across shards')
    if flags & RECORD_SAME_SHARD:
        shard = prev[1]
        prev_end = prev[2] + prev[3]
        offset = prev_end if flags & RECORD_CONTIGUOUS else prev_end + unzigzag(r.varint())
    else:
        shard = r.varint()
        offset = r.varint()
    if offset < 0 or offset > MAX_SAFE_INTEGER:
        r.fail(f'record {i} has a negative offset')
    shape = prev[4] if flags & RECORD_SAME_SHAPE else None
    if shape is None:
        member_count = r.varint()
        if member_count == 0:
            r.fail(f'record {i} has no members')
        if member_count * MIN_MEMBER_BYTES > r.end - r.pos:
            r.fail(f'record {i} claims {member_count} members, more than the page holds')
    else:
        member_count = len(shape)
    members = []
    member_end = 0
    prev_members = prev[4] if prev is not None else ()
    for m in range(member_count):
        if shape is not None:
            like = shape[m]
            ext = like[M_EXT]
            codec = like[M_CODEC]
            gap = like[M_OFFSET] - (0 if m == 0 else shape[m - 1][M_OFFSET] + shape[m - 1][M_STORED])
        else:
            member_flags = r.u8()
            if member_flags & ~MEMBER_KNOWN_FLAGS:
                r.fail(f'record {i} member {m} has unknown flags {member_flags}')
            codec = member_flags & MEMBER_CODEC_MASK
            if codec != CODEC_NONE and codec != CODEC_LZ4:
                r.fail(f'record {i} member {m} has unknown codec {codec}')
            if member_flags & MEMBER_EXT_SAME:
                if m >= len(prev_members):
                    r.fail(f'record {i} member {m} reuses a missing extension')
                ext = prev_members[m][M_EXT]
            else:
                ext = r.utf8(r.varint())
            gap = r.varint()
        member_offset = member_end + gap
        size = r.varint()
        stored = size if codec == CODEC_NONE else r.varint()
        members.append((ext, member_offset, size, stored, codec, r.u32()))
        member_end = member_offset + stored
    if members[0][M_OFFSET] != 0:
        r.fail(f'record {i} span does not start at its first member')
    members = tuple(members)
    lone = member_count == 1 and members[0][M_CODEC] == CODEC_NONE
    record = (key, shard, offset, member_end, members, members[0][M_EXT] if lone else None,
              members[0][M_CRC] if lone else None)
    return key_bytes, record


def _decode_branch(r: ByteReader, page_no: int, level: int, count: int) -> BranchPage:
    if level == 0:
        r.fail('is a branch at level 0')
    keys = []
    children = []
    starts = [0]
    for i in range(count):
        key = r.utf8(r.varint())
        if i > 0 and keys[-1] >= key:
            r.fail(f'record {i} is out of key order')
        keys.append(key)
        children.append(r.u32())
        n = r.varint()
        if n == 0:
            r.fail(f'record {i} has an empty subtree')
        starts.append(starts[-1] + n)
    return BranchPage(page_no, level, keys, children, starts)
