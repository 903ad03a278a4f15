"""A leaf/branch page encoder written from formats/SPEC.md for the tests (the package only reads)."""
import struct

from shardkit.byte_reader import encode_varint, zigzag
from shardkit.index_page import (MEMBER_EXT_SAME, PAGE_HEADER, PAGE_TYPE_BRANCH, PAGE_TYPE_LEAF, RECORD_CONTIGUOUS,
                                 RECORD_SAME_SHAPE, RECORD_SAME_SHARD, page_checksum)


def _gap(members, i):
    return members[i][1] if i == 0 else members[i][1] - (members[i - 1][1] + members[i - 1][3])


def encode_leaf_records(entries) -> bytes:
    """entries: [(key, shard, offset, [(ext, offset, size, stored, codec, crc)])], each against the previous."""
    out = bytearray()
    prev = None
    prev_key = b''
    for key, shard, offset, members in entries:
        kb = key.encode()
        shared = 0
        while shared < min(len(kb), len(prev_key)) and kb[shared] == prev_key[shared]:
            shared += 1
        out += encode_varint(shared) + encode_varint(len(kb) - shared) + kb[shared:]
        length = members[-1][1] + members[-1][3]
        same_shard = prev is not None and prev[1] == shard
        contiguous = same_shard and offset == prev[2] + prev[4]
        same_shape = prev is not None and len(prev[3]) == len(members) and all(
            a[0] == b[0] and a[4] == b[4] and _gap(prev[3], i) == _gap(members, i)
            for i, (a, b) in enumerate(zip(prev[3], members)))
        out.append((RECORD_SAME_SHARD if same_shard else 0) | (RECORD_CONTIGUOUS if contiguous else 0)
                   | (RECORD_SAME_SHAPE if same_shape else 0))
        if not same_shard:
            out += encode_varint(shard) + encode_varint(offset)
        elif not contiguous:
            out += encode_varint(zigzag(offset - (prev[2] + prev[4])))
        if not same_shape:
            out += encode_varint(len(members))
        for i, (ext, _off, size, stored, codec, crc) in enumerate(members):
            if not same_shape:
                same_ext = prev is not None and i < len(prev[3]) and prev[3][i][0] == ext
                out.append(codec | (MEMBER_EXT_SAME if same_ext else 0))
                if not same_ext:
                    e = ext.encode()
                    out += encode_varint(len(e)) + e
                out += encode_varint(_gap(members, i))
            out += encode_varint(size)
            if codec != 0:
                out += encode_varint(stored)
            out += struct.pack('<I', crc)
        prev = (key, shard, offset, members, length)
        prev_key = kb
    return bytes(out)


def seal(records: bytes, page_type: int, count: int, page_no: int, link: int, page_size: int = 1024) -> bytes:
    page = bytearray(page_size)
    page[16:16 + len(records)] = records
    PAGE_HEADER.pack_into(page, 0, page_type, 0, count, 0, page_no, link)
    struct.pack_into('<I', page, 4, page_checksum(bytes(page)))
    return bytes(page)


def leaf_page(entries, page_no=1, next_leaf=0, page_size=1024) -> bytes:
    return seal(encode_leaf_records(entries), PAGE_TYPE_LEAF, len(entries), page_no, next_leaf, page_size)


def branch_page(children, page_no, level, page_size=1024) -> bytes:
    """children: [(first key, child page, count)]"""
    out = bytearray()
    for key, child, count in children:
        kb = key.encode()
        out += encode_varint(len(kb)) + kb + struct.pack('<I', child) + encode_varint(count)
    return seal(bytes(out), PAGE_TYPE_BRANCH, len(children), page_no, level, page_size)
