"""CRC32C (Castagnoli; SPEC: the CRC of b"123456789" is 0xE3069283).

Three backends, the fastest found at import (``BACKEND`` names it):

- ``'isal'``: ISA-L's ``crc32_iscsi`` through ctypes (Debian ``libisal2``), with the CPU's CRC instructions where it
  has them: about 16 GB/s here. A verified read costs little more than an unverified one.
- ``'crc32c'``: the ``crc32c`` module (Debian ``python3-crc32c``, pip ``crc32c``). Debian's build is software only
  (``crc32c.hardware_based`` is False): about 2 GB/s, which bounds verified reads of large members.
- ``'pure'``: a pure-Python table version, about 500x slower than the module; it warns once.
"""
import ctypes
import warnings
from typing import Callable, Optional

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
                      '(apt-get install libisal2 or python3-crc32c, or pip install crc32c)', RuntimeWarning, stacklevel=2)
    table = _TABLE
    crc = value ^ 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


ISAL_LIBRARIES = ('libisal.so.2', 'libisal.so')
ISAL_MAX_CALL_BYTES = 1 << 30
"""crc32_iscsi takes an int length: longer inputs go in pieces of this size."""


def _load_isal() -> Optional[Callable[..., int]]:
    for name in ISAL_LIBRARIES:
        try:
            iscsi = ctypes.CDLL(name).crc32_iscsi
        except (OSError, AttributeError):
            continue
        iscsi.restype = ctypes.c_uint32
        iscsi.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32)

        def crc32c_isal(data, value: int = 0) -> int:
            """CRC32C of ``data`` continuing from ``value``, by ISA-L (which neither pre- nor post-inverts)."""
            if type(data) is not bytes:
                data = bytes(data)  # c_char_p takes bytes without a copy; a view or bytearray is copied once
            n = len(data)
            crc = value ^ 0xFFFFFFFF
            if n <= ISAL_MAX_CALL_BYTES:
                return iscsi(data, n, crc) ^ 0xFFFFFFFF
            view = memoryview(data)
            for start in range(0, n, ISAL_MAX_CALL_BYTES):
                piece = bytes(view[start:start + ISAL_MAX_CALL_BYTES])
                crc = iscsi(piece, len(piece), crc)
            return crc ^ 0xFFFFFFFF

        if crc32c_isal(b'123456789') == 0xE3069283:  # a library of another ABI or convention is not used
            raw = ctypes.CDLL(name).crc32_iscsi  # a second handle, without argtypes: a call costs half as much
            raw.restype = ctypes.c_uint32
            if raw(b'123456789', 9, -1) ^ 0xFFFFFFFF == 0xE3069283:
                return crc32c_isal, raw
            return crc32c_isal, None
    return None, None


try:
    from crc32c import crc32c as crc32c_module  # type: ignore
except ImportError:  # pragma: no cover - depends on the machine
    crc32c_module = None

crc32c_isal, crc32c_iscsi = _load_isal()
"""``crc32c_iscsi(data, len(data), -1) ^ 0xFFFFFFFF`` is the CRC32C of ``data`` (bytes, under 2 GiB): ISA-L called
with no argument conversion, for the hot paths of reads (None when ISA-L is not loaded)."""
crc32c: Callable[..., int]
if crc32c_isal is not None:
    crc32c, BACKEND = crc32c_isal, 'isal'
elif crc32c_module is not None:  # pragma: no cover - depends on the machine
    crc32c, BACKEND = crc32c_module, 'crc32c'
else:  # pragma: no cover - depends on the machine
    crc32c, BACKEND = crc32c_pure, 'pure'
NATIVE = BACKEND != 'pure'


def crc32c_hex(value: int) -> str:
    """8 lowercase hex digits, as the manifest records a CRC."""
    return format(value, '08x')
