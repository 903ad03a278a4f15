"""The packed layout's 16-byte shard header (SPEC "Packed layout", formats/packed-layout.ts). Tar-layout shards
need no parsing to read: the index gives each member's offset inside the span, headers included."""
import struct

from .errors import CORRUPT_SHARD, TRUNCATED, UNSUPPORTED_VERSION, ShardkitError

PACKED_MAGIC = b'\x89SKPAK\r\n'
PACKED_FORMAT_VERSION = 1
PACKED_HEADER_BYTES = 16
PACKED_HEADER = struct.Struct('<8sII')
"""magic | u32 version | u32 reserved (zero)"""


def check_packed_header(data, file: str) -> None:
    if len(data) < PACKED_HEADER_BYTES:
        raise ShardkitError(TRUNCATED, f'{file}: packed shard shorter than its header', file=file)
    magic, version, reserved = PACKED_HEADER.unpack_from(data, 0)
    if magic != PACKED_MAGIC:
        raise ShardkitError(CORRUPT_SHARD, f'{file}: not a shardkit packed shard (wrong magic)', file=file)
    if version > PACKED_FORMAT_VERSION:
        raise ShardkitError(UNSUPPORTED_VERSION, f'{file}: packed shard version {version} is newer than this shardkit '
                            'reads', file=file)
    if version == 0:
        raise ShardkitError(CORRUPT_SHARD, f'{file}: packed shard header has version 0 (versions start at 1)', file=file)
    if reserved != 0:
        raise ShardkitError(CORRUPT_SHARD, f'{file}: packed shard header has a non-zero reserved field', file=file)
