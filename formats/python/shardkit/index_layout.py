"""The index file: page 0 the header, then B+-tree pages, then the shard table (SPEC "Index file",
formats/index-layout.ts). Offsets below follow the SPEC's header table."""
import struct
from typing import List, NamedTuple, Optional

from .byte_reader import MAX_SAFE_INTEGER, ByteReader
from .checksum import crc32c
from .errors import BAD_MAGIC, CORRUPT_INDEX, TRUNCATED, UNSUPPORTED_VERSION, ShardkitError

INDEX_MAGIC = b'\x89SKIDX\r\n'
"""The high byte catches 7-bit transfers, CR LF catches newline translation (as PNG does)."""
INDEX_FORMAT_VERSION = 1
DEFAULT_PAGE_SIZE = 4096
MIN_PAGE_SIZE = 1024
MAX_PAGE_SIZE = 65536
HEADER_BYTES = 128
HDR_CRC = 124
"""The header CRC32C covers bytes [0, HDR_CRC)."""
MAX_HEIGHT = 64

# Header (page 0), little-endian, from byte 8 (after the 8-byte magic) to HDR_CRC:
#  8 u16 version | 10 u8 layout (0 tar, 1 packed) | 11 u8 reserved | 12 u32 pageSize | 16 u64 entryCount
# 24 u32 rootPage | 28 u32 height | 32 u32 pageCount | 36 u32 firstLeaf | 40 u32 shardCount | 44 u32 tableCrc
# 48 u64 tableOffset | 56 u64 tableLength | 64 u64 memberCount | 72 u64 spanBytes | 80 44 reserved | 124 u32 headerCrc
HEADER_FIELDS = struct.Struct('<HBBIQIIIIIIQQQQ')
HEADER_FIELDS_OFFSET = 8
HEADER_CRC = struct.Struct('<I')

LAYOUT_CODES = {0: 'tar', 1: 'packed'}
FINGERPRINT_BYTES = 4096
"""A shard's fingerprint is the CRC32C of its first min(bytes, FINGERPRINT_BYTES) bytes."""


def index_remedy(layout: Optional[str]) -> str:
    """What an error about a damaged or lost index tells the user to do (as the Node reader says it)."""
    if layout == 'tar':
        return 'run `shardkit reindex`'
    if layout == 'packed':
        return ('restore the index from a backup or pack the dataset again (`shardkit reindex` cannot rebuild a '
                'packed index)')
    return 'run `shardkit reindex` (tar layout) or restore the index from a backup (packed layout)'


class IndexHeader(NamedTuple):
    version: int
    layout: str
    page_size: int
    entry_count: int
    root_page: int
    height: int
    page_count: int
    first_leaf: int
    shard_count: int
    table_crc: int
    table_offset: int
    table_length: int
    member_count: int
    span_bytes: int
    crc: int
    """CRC32C of the header: the index's identity, recorded in the manifest as index.crc32c."""


class ShardRecord(NamedTuple):
    file: str
    bytes: int
    samples: int
    crc32c: int
    fingerprint: int


def decode_index_header(data, file: str, file_size: Optional[int] = None) -> IndexHeader:
    """Decodes and checks the header (page 0 whole when the caller has it: its tail must be zero). Wrong magic, a
    future version and a damaged header are three different errors; ``file_size`` catches truncation."""
    if len(data) < HEADER_BYTES:
        raise ShardkitError(TRUNCATED, f'{file}: index is {len(data)} bytes, shorter than its {HEADER_BYTES}-byte '
                            'header', file=file)
    if bytes(data[:8]) != INDEX_MAGIC:
        raise ShardkitError(BAD_MAGIC, f'{file}: not a shardkit index (wrong magic bytes)', file=file)
    (version, layout_code, _reserved, page_size, entry_count, root_page, height, page_count, first_leaf,
     shard_count, table_crc, table_offset, table_length, member_count, span_bytes) = \
        HEADER_FIELDS.unpack_from(data, HEADER_FIELDS_OFFSET)
    if version > INDEX_FORMAT_VERSION:
        raise ShardkitError(UNSUPPORTED_VERSION, f'{file}: index format version {version} is newer than this '
                            f'shardkit reads ({INDEX_FORMAT_VERSION}); upgrade shardkit', file=file)
    crc = HEADER_CRC.unpack_from(data, HDR_CRC)[0]
    known = [None]  # the layout byte names the remedy only once the checksum has vouched for it

    def corrupt(why):
        raise ShardkitError(CORRUPT_INDEX, f'{file}: index header {why}; {index_remedy(known[0])}', file=file)

    if crc32c(bytes(data[:HDR_CRC])) != crc:
        corrupt('fails its checksum')
    if version == 0:
        corrupt('has version 0')
    layout = LAYOUT_CODES.get(layout_code)
    if layout is None:
        corrupt(f'names unknown layout {layout_code}')
    known[0] = layout
    for name, off, value in (('entryCount', 16, entry_count), ('tableOffset', 48, table_offset),
                             ('tableLength', 56, table_length), ('memberCount', 64, member_count),
                             ('spanBytes', 72, span_bytes)):
        if value > MAX_SAFE_INTEGER:
            corrupt(f'field at byte {off} exceeds 2^53')
    if page_size & (page_size - 1) or page_size < MIN_PAGE_SIZE or page_size > MAX_PAGE_SIZE:
        corrupt(f'has invalid page size {page_size}')
    tail = bytes(data[HEADER_BYTES:min(len(data), page_size)])
    if tail.count(0) != len(tail):
        corrupt('page 0 holds bytes after the header')
    if table_offset != page_count * page_size:
        corrupt('places the shard table away from the end of the pages')
    empty = entry_count == 0
    if empty != (root_page == 0) or empty != (height == 0) or empty != (first_leaf == 0):
        corrupt('has an inconsistent empty tree')
    if not empty and (root_page >= page_count or first_leaf >= page_count or height > MAX_HEIGHT):
        corrupt('points outside its pages')
    if file_size is not None and file_size != table_offset + table_length:
        code = TRUNCATED if file_size < table_offset + table_length else CORRUPT_INDEX
        raise ShardkitError(code, f'{file}: index is {file_size} bytes but its header says '
                            f'{table_offset + table_length}', file=file)
    return IndexHeader(version, layout, page_size, entry_count, root_page, height, page_count, first_leaf,
                       shard_count, table_crc, table_offset, table_length, member_count, span_bytes, crc)


def decode_shard_table(data, header: IndexHeader, file: str) -> List[ShardRecord]:
    """The shard table (varint count; per shard: name, bytes, samples, u32 crc32c, u32 fingerprint), checked
    against its CRC and the header."""
    if crc32c(bytes(data)) != header.table_crc:
        raise ShardkitError(CORRUPT_INDEX, f'{file}: shard table fails its checksum; {index_remedy(header.layout)}',
                            file=file)
    r = ByteReader(data, CORRUPT_INDEX, f'{file}: shard table')
    count = r.varint()
    if count != header.shard_count:
        r.fail(f'lists {count} shards but the header says {header.shard_count}')
    shards = []
    for _ in range(count):
        name = r.utf8(r.varint())
        size = r.varint()
        samples = r.varint()
        shards.append(ShardRecord(name, size, samples, r.u32(), r.u32()))
    if r.pos != len(data):
        r.fail('has trailing bytes')
    return shards
