"""Varints, zigzag, CRC32C, the index header and shard table, LZ4 frames (exact values and hypothesis)."""
import struct
import warnings

import lz4.frame
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardkit import checksum
from shardkit.byte_reader import ByteReader, encode_varint, unzigzag, zigzag
from shardkit.errors import (BAD_MAGIC, CORRUPT_INDEX, CORRUPT_SHARD, TRUNCATED, UNSUPPORTED_VERSION,
                             ShardkitError)
from shardkit.index_layout import (HEADER_FIELDS, INDEX_MAGIC, ShardRecord, decode_index_header,
                                   decode_shard_table)
from shardkit.lz4frame import decompress_member


@given(st.integers(0, 2 ** 53 - 1))
def test_varint_round_trip(n):
    data = encode_varint(n)
    assert len(data) <= 8
    r = ByteReader(data, CORRUPT_INDEX, 'x')
    assert r.varint() == n and r.pos == len(data)


def test_varint_exact_bytes_and_limits():
    assert encode_varint(0) == b'\x00' and encode_varint(127) == b'\x7f' and encode_varint(300) == b'\xac\x02'
    with pytest.raises(ShardkitError, match='longer than 8 bytes'):
        ByteReader(b'\x80' * 9, CORRUPT_INDEX, 'x').varint()
    with pytest.raises(ShardkitError, match='exceeds 2\\^53'):
        ByteReader(b'\xff' * 7 + b'\x7f', CORRUPT_INDEX, 'x').varint()
    with pytest.raises(ShardkitError, match='runs past its end'):
        ByteReader(b'\x80', CORRUPT_INDEX, 'x').varint()


@given(st.integers(-(2 ** 52), 2 ** 52))
def test_zigzag(n):
    assert unzigzag(zigzag(n)) == n and zigzag(n) >= 0
    assert [zigzag(v) for v in (0, -1, 1, -2)] == [0, 1, 2, 3]


@settings(max_examples=200)
@given(st.binary(max_size=300), st.integers(0, 2 ** 32 - 1))
def test_crc32c_pure_equals_native(data, seed):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        assert checksum.crc32c_pure(data, seed) == checksum.crc32c(data, seed)


BACKENDS = {'isal': checksum.crc32c_isal, 'crc32c': checksum.crc32c_module}


@pytest.mark.parametrize('name', sorted(BACKENDS))
@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=3000), seed=st.integers(0, 2 ** 32 - 1), cut=st.integers(0, 3000),
       kind=st.sampled_from([bytes, bytearray, memoryview]))
def test_crc32c_backends_equal_pure(name, data, seed, cut, kind):
    """Every backend gives the pure version's value, from any buffer type, and continues a CRC across pieces."""
    fn = BACKENDS[name]
    if fn is None:
        pytest.skip(f'the {name} backend is not installed here')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        want = checksum.crc32c_pure(data, seed)
    assert fn(kind(data), seed) == want
    cut = min(cut, len(data))
    assert fn(kind(data[cut:]), fn(kind(data[:cut]), seed)) == want


def test_crc32c_isal_splits_long_inputs(monkeypatch):
    if checksum.crc32c_isal is None:
        pytest.skip('libisal2 is not installed here')
    data = bytes(range(256)) * 40
    want = checksum.crc32c_module(data) if checksum.crc32c_module else checksum.crc32c_pure(data)
    monkeypatch.setattr(checksum, 'ISAL_MAX_CALL_BYTES', 1000)  # 11 pieces, the last one short
    assert checksum.crc32c_isal(data) == want
    assert checksum.crc32c_isal(data, 0x12345678) == checksum.crc32c_isal(data[5000:], checksum.crc32c_isal(data[:5000], 0x12345678))


def test_crc32c_backend_is_the_fastest_installed():
    assert checksum.crc32c is {'isal': checksum.crc32c_isal, 'crc32c': checksum.crc32c_module,
                               'pure': checksum.crc32c_pure}[checksum.BACKEND]
    if checksum.crc32c_isal is not None:
        assert checksum.BACKEND == 'isal'
    assert checksum.NATIVE == (checksum.BACKEND != 'pure')


def test_crc32c_check_value_and_warning():
    assert checksum.crc32c(b'123456789') == 0xE3069283
    checksum._warned = False
    with pytest.warns(RuntimeWarning, match='python3-crc32c'):
        assert checksum.crc32c_pure(b'123456789') == 0xE3069283
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        checksum.crc32c_pure(b'again')  # once only


def header_bytes(**fields):
    values = dict(version=1, layout=0, reserved=0, page_size=1024, entry_count=5, root=1, height=1, pages=2,
                  first_leaf=1, shards=1, table_crc=0, table_offset=2048, table_length=10, members=5, span=100)
    values.update(fields)
    page = bytearray(1024)
    page[:8] = INDEX_MAGIC
    HEADER_FIELDS.pack_into(page, 8, *values.values())
    struct.pack_into('<I', page, 124, checksum.crc32c(bytes(page[:124])))
    return bytes(page)


def test_header_fields_at_spec_offsets():
    h = decode_index_header(header_bytes(), 'i', 2058)
    assert (h.page_size, h.entry_count, h.root_page, h.page_count, h.table_offset, h.table_length) == (1024, 5, 1, 2, 2048, 10)
    raw = header_bytes(entry_count=0x0102030405)
    assert raw[16:24] == bytes([5, 4, 3, 2, 1, 0, 0, 0])


@pytest.mark.parametrize('data, size, code', [
    (b'\x7f' + header_bytes()[1:], None, BAD_MAGIC),
    (header_bytes(version=2), None, UNSUPPORTED_VERSION),
    (header_bytes()[:124] + b'\0\0\0\0' + header_bytes()[128:], None, CORRUPT_INDEX),
    (header_bytes(version=0), None, CORRUPT_INDEX),
    (header_bytes(layout=7), None, CORRUPT_INDEX),
    (header_bytes(page_size=3000), None, CORRUPT_INDEX),
    (header_bytes(table_offset=4096), None, CORRUPT_INDEX),
    (header_bytes(root=0), None, CORRUPT_INDEX),
    (header_bytes(root=9), None, CORRUPT_INDEX),
    (header_bytes(entry_count=2 ** 53), None, CORRUPT_INDEX),
    (header_bytes()[:1000] + b'\x01' + header_bytes()[1001:], None, CORRUPT_INDEX),
    (header_bytes(), 2057, TRUNCATED),
    (header_bytes(), 2059, CORRUPT_INDEX),
    (header_bytes()[:100], None, TRUNCATED),
])
def test_header_refusals(data, size, code):
    with pytest.raises(ShardkitError) as e:
        decode_index_header(data, 'idx', size)
    assert e.value.code == code


def test_shard_table():
    table = encode_varint(2) + b''.join(
        encode_varint(len(n)) + n + encode_varint(b) + encode_varint(s) + struct.pack('<II', c, f)
        for n, b, s, c, f in ((b'shard-000000.tar', 70000, 3, 7, 8), ('é'.encode(), 1, 0, 9, 10)))
    h = decode_index_header(header_bytes(shards=2, table_crc=checksum.crc32c(table), table_length=len(table)), 'i')
    assert decode_shard_table(table, h, 'i') == [ShardRecord('shard-000000.tar', 70000, 3, 7, 8), ShardRecord('é', 1, 0, 9, 10)]
    for bad in (table + b'\0', table[:-1]):
        h2 = h._replace(table_crc=checksum.crc32c(bad))
        with pytest.raises(ShardkitError) as e:
            decode_shard_table(bad, h2, 'i')
        assert e.value.code == CORRUPT_INDEX
    with pytest.raises(ShardkitError, match='fails its checksum'):
        decode_shard_table(table, h._replace(table_crc=1), 'i')


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=200_000), st.sampled_from([4, 5, 6, 7]), st.booleans(), st.booleans())
def test_lz4_frames_of_any_block_size_and_checksums(data, block, content_checksum, store_size):
    frame = lz4.frame.compress(data, block_size=block, content_checksum=content_checksum,
                               store_size=store_size, block_linked=False)
    assert decompress_member(frame, len(data), 'w') == data


def test_lz4_bombs_and_damage():
    data = b'a' * (9 << 20)  # three 4 MiB blocks that compress to almost nothing
    frame = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX4MB)
    assert len(decompress_member(frame, len(data), 'ok')) == len(data)
    with pytest.raises(ShardkitError, match='more blocks than 10 bytes need') as e:
        decompress_member(frame, 10, 'bomb')
    assert e.value.code == CORRUPT_SHARD
    small = lz4.frame.compress(b'hello world' * 10)
    for bad, why in ((b'\0' + small[1:], 'wrong magic'), (small[:-3], 'truncated|trailing'),
                     (small + b'\0', 'trailing'), (small[:4] + bytes([small[4] | 1]) + small[5:], 'dictionary'),
                     (small[:4] + bytes([small[4] & 0x3F]) + small[5:], 'unsupported version')):
        with pytest.raises(ShardkitError, match=why):
            decompress_member(bad, 110, lambda: 'where')
    with pytest.raises(ShardkitError, match='decompresses to 110 bytes, the index says 111'):
        decompress_member(small, 111, 'w')


def test_lz4_missing_module_names_the_package(monkeypatch):
    import builtins
    import shardkit.lz4frame as lf
    real_import = builtins.__import__

    def no_lz4(name, *args, **kwargs):
        if name.startswith('lz4'):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(lf, '_frame', None)
    monkeypatch.setattr(builtins, '__import__', no_lz4)
    with pytest.raises(ShardkitError, match='python3-lz4') as e:
        decompress_member(lz4.frame.compress(b'x' * 100), 100, 'ds: sample "k"')
    assert e.value.code == 'SHARDKIT_ERR_MISSING_DEPENDENCY'
