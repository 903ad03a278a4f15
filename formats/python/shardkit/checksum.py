"""CRC32C (Castagnoli; SPEC: the CRC of b"123456789" is 0xE3069283).

Debian's ``python3-crc32c`` (pip ``crc32c``) runs it in C with the CPU's instructions. Without it a pure-Python
table version gives the same values about 500x slower, and warns once.
"""
import warnings
from typing import Callable

POLY_REFLECTED = 0x82F63B78  # 0x1EDC6F41 bit-reversed


def _make_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ POLY_REFLECTED if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _make_table()
_warned = False


def crc32c_pure(data, value: int = 0) -> int:
    """CRC32C of ``data`` continuing from ``value`` (the CRC of the bytes before it), in pure Python."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn('shardkit: the crc32c module is not installed; checksums run in pure Python, slowly '
                      '(apt-get install python3-crc32c, or pip install crc32c)', RuntimeWarning, stacklevel=2)
    table = _TABLE
    crc = value ^ 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    from crc32c import crc32c as _native  # type: ignore

    crc32c: Callable[..., int] = _native
    NATIVE = True
except ImportError:  # pragma: no cover - depends on the machine
    crc32c = crc32c_pure
    NATIVE = False


def crc32c_hex(value: int) -> str:
    """8 lowercase hex digits, as the manifest records a CRC."""
    return format(value, '08x')
