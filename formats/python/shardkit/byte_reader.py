"""Little-endian cursors with LEB128 varints (SPEC: at most 8 bytes, value < 2^53), as formats/bytes.ts."""
import struct

MAX_VARINT_BYTES = 8
MAX_SAFE_INTEGER = 2 ** 53 - 1
_U32 = struct.Struct('<I')


def zigzag(n: int) -> int:
    return n * 2 if n >= 0 else -n * 2 - 1


def unzigzag(n: int) -> int:
    return n // 2 if n % 2 == 0 else -(n + 1) // 2


def encode_varint(value: int) -> bytes:
    """Unsigned LEB128 (for tests and writers of fixtures)."""
    if value < 0 or value > MAX_SAFE_INTEGER:
        raise ValueError(f'varint out of range: {value}')
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class ByteReader:
    """Reads ``data[pos:end]`` with bounds checks; any overrun raises ShardkitError(code) about ``what``."""

    __slots__ = ('data', 'pos', 'end', 'code', 'what')

    def __init__(self, data, code: str, what: str, start: int = 0, end=None):
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end
        self.code = code
        self.what = what

    def fail(self, reason: str):
        from .errors import ShardkitError
        raise ShardkitError(self.code, f'{self.what}: {reason}')

    def u8(self) -> int:
        pos = self.pos
        if pos >= self.end:
            self.fail(f'record runs past its end at byte {pos}')
        self.pos = pos + 1
        return self.data[pos]

    def u32(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            self.fail(f'record runs past its end at byte {pos}')
        self.pos = pos + 4
        return _U32.unpack_from(self.data, pos)[0]

    def varint(self) -> int:
        data = self.data
        pos = self.pos
        end = self.end
        value = 0
        shift = 0
        for _ in range(MAX_VARINT_BYTES):
            if pos >= end:
                self.pos = pos
                self.fail(f'record runs past its end at byte {pos}')
            b = data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                if value > MAX_SAFE_INTEGER:
                    self.fail(f'varint exceeds 2^53 at byte {pos}')
                return value
            shift += 7
        self.pos = pos
        self.fail(f'varint longer than {MAX_VARINT_BYTES} bytes at byte {pos}')

    def take(self, n: int) -> bytes:
        pos = self.pos
        if pos + n > self.end:
            self.fail(f'record runs past its end at byte {pos}')
        self.pos = pos + n
        return bytes(self.data[pos:pos + n])

    def utf8(self, n: int) -> str:
        raw = self.take(n)
        try:
            return raw.decode('utf-8')
        except UnicodeDecodeError:
            self.fail(f'invalid UTF-8 at byte {self.pos - n}')
