"""LZ4 members: one standard LZ4 frame each (SPEC "Compression", formats/lz4.ts).

Before decompressing, the frame's block list is walked and bounded by the size the index recorded, so a hostile
frame cannot expand beyond it (no decompression bombs); then the output length must equal that size.
"""
import struct

from .errors import CORRUPT_SHARD, MISSING_DEPENDENCY, ShardkitError

LZ4_FRAME_MAGIC = 0x184D2204
FLG_CONTENT_SIZE = 0x08
FLG_CONTENT_CHECKSUM = 0x04
FLG_BLOCK_CHECKSUM = 0x10
FLG_DICT_ID = 0x01
BLOCK_UNCOMPRESSED = 0x80000000
BLOCK_MAX_BYTES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
"""BD byte bits 4-6 -> maximum block size."""
_U32 = struct.Struct('<I')

_frame = None


def _lz4_frame(where):
    global _frame
    if _frame is None:
        try:
            import lz4.frame as frame  # type: ignore
        except ImportError:
            place = where() if callable(where) else where
            raise ShardkitError(MISSING_DEPENDENCY, f'{place}: the member is LZ4-compressed and the lz4 module is not '
                                'installed; apt-get install python3-lz4 (or pip install lz4)') from None
        _frame = frame
    return _frame


def decompress_member(frame, expected_size: int, where) -> bytes:
    """One member's frame decompressed to exactly ``expected_size`` bytes, else CORRUPT_SHARD naming ``where``.

    ``where`` is a string or a function returning one (built only on failure).
    """
    def fail(why):
        place = where() if callable(where) else where
        raise ShardkitError(CORRUPT_SHARD, f'{place}: LZ4 frame {why}')

    n = len(frame)
    if n < 7 or _U32.unpack_from(frame, 0)[0] != LZ4_FRAME_MAGIC:
        fail('has a wrong magic number')
    flg = frame[4]
    bd = frame[5]
    if flg >> 6 != 1:
        fail('has an unsupported version')
    if flg & FLG_DICT_ID:
        fail('needs a dictionary')
    block_max = BLOCK_MAX_BYTES.get((bd >> 4) & 7)
    if block_max is None:
        fail('has an invalid block size')
    pos = 6 + (8 if flg & FLG_CONTENT_SIZE else 0) + 1
    blocks = 0
    block_checksum = 4 if flg & FLG_BLOCK_CHECKSUM else 0
    while True:
        if pos + 4 > n:
            fail('is truncated')
        word = _U32.unpack_from(frame, pos)[0]
        pos += 4
        if word == 0:
            break
        size = word & ~BLOCK_UNCOMPRESSED
        if size > block_max:
            fail('has a block larger than its maximum')
        pos += size + block_checksum
        blocks += 1
    if pos + (4 if flg & FLG_CONTENT_CHECKSUM else 0) != n:
        fail('has trailing or missing bytes')
    if blocks > -(-expected_size // block_max):
        fail(f'has more blocks than {expected_size} bytes need')
    lz4 = _lz4_frame(where)
    try:
        out = lz4.decompress(bytes(frame))
    except Exception:
        fail('does not decompress')
    if len(out) != expected_size:
        fail(f'decompresses to {len(out)} bytes, the index says {expected_size}')
    return out
