"""Pages (index_page.py): exact bytes from the SPEC tables, a hypothesis round trip through an encoder written
from the SPEC, and damaged pages refused with CORRUPT_INDEX."""
import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from page_codec import branch_page, encode_leaf_records, leaf_page, seal
from shardkit.errors import CORRUPT_INDEX, ShardkitError
from shardkit.index_page import PAGE_TYPE_LEAF, decode_page


def test_leaf_records_exact_bytes():
    entries = [('a/1', 0, 16, [('jpg', 0, 5, 5, 0, 0x11223344)]),
               ('a/2', 0, 21, [('jpg', 0, 7, 7, 0, 0x55667788)]),          # contiguous, same shape
               ('a/3', 0, 30, [('jpg', 0, 2, 2, 0, 1), ('txt', 4, 3, 9, 1, 2)]),  # gap 2, lz4 member
               ('b', 1, 99, [('jpg', 0, 1, 1, 0, 3)])]
    records = encode_leaf_records(entries)
    assert records.hex(' ') == ' '.join([
        '00 03 61 2f 31', '00', '00 10', '01', '00 03 6a 70 67 00 05', '44 33 22 11',
        '02 01 32', '07', '07', '88 77 66 55',
        '02 01 33', '01', '04', '02', '10 00 02', '01 00 00 00', '01 03 74 78 74 02 03 09', '02 00 00 00',
        '00 01 62', '00', '01 63', '01', '10 00 01', '03 00 00 00',
    ])
    leaf = decode_page(seal(records, PAGE_TYPE_LEAF, 4, 1, 0), 1, 'i')
    assert leaf.keys == ['a/1', 'a/2', 'a/3', 'b']
    assert leaf.records[1] == (0, 21, 7, (('jpg', 0, 7, 7, 0, 0x55667788),), 'jpg', 0x55667788)
    assert leaf.records[2][:4] == (0, 30, 13, (('jpg', 0, 2, 2, 0, 1), ('txt', 4, 3, 9, 1, 2)))
    assert leaf.records[2][4] is None
    assert leaf.records[3][:3] == (1, 99, 1)


member = st.tuples(st.sampled_from(['jpg', 'txt', 'seg.png', 'ü', '']), st.integers(0, 3), st.integers(0, 2 ** 40),
                   st.integers(0, 2 ** 20), st.sampled_from([0, 1]), st.integers(0, 2 ** 32 - 1))


@st.composite
def leaf_entries(draw):
    keys = sorted(draw(st.sets(st.text(st.characters(blacklist_categories=['Cs']), min_size=1, max_size=12),
                               min_size=1, max_size=12)))
    entries = []
    prev_end = None
    for key in keys:
        raw = draw(st.lists(member, min_size=1, max_size=3, unique_by=lambda m: m[0]))
        members, end = [], 0
        for i, (ext, gap, size, stored, codec, crc) in enumerate(raw):
            off = 0 if i == 0 else end + gap
            stored = size if codec == 0 else stored
            members.append((ext, off, size, stored, codec, crc))
            end = off + stored
        shard = draw(st.integers(0, 2))
        if prev_end is not None and draw(st.booleans()):
            offset = prev_end  # contiguous when the shard matches
        else:
            offset = draw(st.integers(0, 2 ** 45))
        entries.append((key, shard, offset, members))
        prev_end = offset + end
    return entries


@settings(max_examples=300, deadline=None)
@given(leaf_entries())
def test_leaf_round_trip(entries):
    page = leaf_page(entries, page_no=3, next_leaf=9, page_size=65536)
    leaf = decode_page(page, 3, 'i')
    assert leaf.next == 9 and leaf.keys == [e[0] for e in entries]
    for (key, shard, offset, members), rec in zip(entries, leaf.records):
        assert rec[:4] == (shard, offset, members[-1][1] + members[-1][3], tuple(members))


def test_branch_page():
    page = branch_page([('a', 2, 10), ('m', 3, 5)], page_no=4, level=1)
    b = decode_page(page, 4, 'i')
    assert (b.keys, b.children, b.starts, b.level) == (['a', 'm'], [2, 3], [0, 10, 15], 1)


@pytest.mark.parametrize('mutate, why', [
    (lambda p: p[:40] + bytes([p[40] ^ 1]) + p[41:], 'fails its checksum'),
    (lambda p: p[:1] + b'\x01' + p[2:], 'fails its checksum'),
])
def test_damage_fails_the_checksum(mutate, why):
    page = leaf_page([('k', 0, 0, [('x', 0, 1, 1, 0, 0)])])
    with pytest.raises(ShardkitError) as e:
        decode_page(mutate(page), 1, 'idx')
    assert e.value.code == CORRUPT_INDEX and why in e.value.message


def test_wrong_place_and_hostile_records():
    page = leaf_page([('k', 0, 0, [('x', 0, 1, 1, 0, 0)])], page_no=2)
    with pytest.raises(ShardkitError, match='says it is page 2'):
        decode_page(page, 5, 'idx')
    # a checksummed page claiming a huge key suffix, or more members than it holds: CORRUPT_INDEX, not an allocation
    for records in (bytes([0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]),
                    bytes([0, 1, 0x6B, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
                    bytes([0, 1, 0x6B, 0, 0, 0, 147, 1])):
        with pytest.raises(ShardkitError) as e:
            decode_page(seal(records, PAGE_TYPE_LEAF, 1, 1, 0), 1, 'idx')
        assert e.value.code == CORRUPT_INDEX
    # a leaf linking backwards, records out of order, a first record with flags
    with pytest.raises(ShardkitError, match='links to earlier page'):
        decode_page(leaf_page([('k', 0, 0, [('x', 0, 1, 1, 0, 0)])], page_no=4, next_leaf=3), 4, 'idx')
    two = encode_leaf_records([('a', 0, 0, [('x', 0, 1, 1, 0, 0)]), ('b', 0, 9, [('x', 0, 1, 1, 0, 0)])])
    swapped = two.replace(b'\x00\x01a', b'\x00\x01c', 1)
    with pytest.raises(ShardkitError, match='out of key order'):
        decode_page(seal(swapped, PAGE_TYPE_LEAF, 2, 1, 0), 1, 'idx')
    flagged = bytes([0, 1, 0x6B, RECORD_FLAGS_SAME_SHARD]) + b'\x01\x00\x01\x00\x00\x00\x00'
    with pytest.raises(ShardkitError, match='previous record the page does not have'):
        decode_page(seal(flagged, PAGE_TYPE_LEAF, 1, 1, 0), 1, 'idx')


RECORD_FLAGS_SAME_SHARD = 1


@st.composite
def same_shape_entries(draw):
    """Leaves as packs write them for one-file samples: mostly one member of one extension, neighbours in one shard
    (contiguous, or a tar header apart), keys sharing prefixes, some long; sometimes LZ4, a second member, a new
    shard."""
    n = draw(st.integers(1, 40))
    prefix = draw(st.sampled_from(['', 'n01440764/', 'x' * 130 + '/', 'Ω/ж/']))
    keys = sorted({prefix + draw(st.text('ab0ü😀', min_size=1, max_size=6)) for _ in range(n)})
    codec = draw(st.sampled_from([0, 0, 1]))
    entries, end, shard = [], 0, 0
    for key in keys:
        size = draw(st.integers(0, 2 ** 21))
        stored = size if codec == 0 else draw(st.integers(0, 2 ** 21))
        members = [('jpg', 0, size, stored, codec, draw(st.integers(0, 2 ** 32 - 1)))]
        if draw(st.integers(0, 9)) == 0:
            members.append(('cls', stored + 3, 1, 1, 0, 7))
        if draw(st.integers(0, 9)) == 0 and entries:
            shard += 1
        # a hostile index may point before the shard's start (a negative offset): refused, by either path
        offset = end + draw(st.sampled_from([0, 0, 512, 1536, -end - 1])) if entries else draw(st.integers(0, 2 ** 40))
        if offset < 0 and shard != entries[-1][1]:
            offset = max(end, 0)  # a record in a new shard stores its offset as an unsigned varint
        entries.append((key, shard, offset, members))
        end = offset + members[-1][1] + members[-1][3]
    return entries


def decode_both(page):
    """decode_page's result (records, or the error's code and message) with and without the same-shape fast path."""
    from shardkit import index_page

    def run():
        try:
            leaf = decode_page(page, 3, 'i')
            return leaf.keys, leaf.records
        except ShardkitError as e:
            return e.code, str(e)

    fast = run()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(index_page, '_decode_same_shape_run', lambda data, pos, end, key, prev, *a: (0, pos, key, prev))
        general = run()
    return fast, general


@settings(max_examples=200, deadline=None)
# a hostile negative offset followed by a record in a new shard (which stores its offset unsigned)
@example(entries=[('0', 0, 0, [('jpg', 0, 0, 0, 0, 0)]), ('00', 0, -1, [('jpg', 0, 0, 0, 0, 0)]),
                  ('a', 1, 0, [('jpg', 0, 0, 0, 0, 0)])], damage=[])
@given(entries=same_shape_entries(), damage=st.lists(st.tuples(st.integers(0, 4000), st.integers(1, 255)), max_size=3))
def test_same_shape_fast_path_equals_the_general_decoder(entries, damage):
    """Whole records (lone member fields too), on intact pages and on pages with bytes changed (and resealed, so
    the record decoder sees the damage): the same records or the same error."""
    records = bytearray(encode_leaf_records(entries))
    fast, general = decode_both(seal(bytes(records), PAGE_TYPE_LEAF, len(entries), 3, 9, 8192))
    assert fast == general
    if all(e[2] >= 0 for e in entries):
        assert fast[0] == [e[0] for e in entries]
    for at, xor in damage:
        if records:
            records[at % len(records)] ^= xor
    fast, general = decode_both(seal(bytes(records), PAGE_TYPE_LEAF, len(entries), 3, 9, 8192))
    assert fast == general
