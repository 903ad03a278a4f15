"""Key ranges: ``[start, end)`` and/or a prefix, as positions (src/read/key-range.ts, formats/key-order.ts).
Python compares str by code point, which is the UTF-8 byte order keys are sorted in."""
from typing import Optional


def prefix_end(prefix: str) -> Optional[str]:
    """The smallest key greater than every key starting with ``prefix`` (None when there is none)."""
    cps = [ord(c) for c in prefix]
    while cps:
        last = cps.pop() + 1
        if last == 0xD800:
            last = 0xE000  # no key holds a lone surrogate
        if last <= 0x10FFFF:
            return ''.join(map(chr, cps)) + chr(last)
    return None


def range_bounds(start: Optional[str], end: Optional[str], prefix: Optional[str]):
    """(low key or None, high key or None) of the range."""
    lo = start
    if prefix is not None and (lo is None or prefix > lo):
        lo = prefix
    hi = end
    pend = prefix_end(prefix) if prefix is not None else None
    if pend is not None and (hi is None or pend < hi):
        hi = pend
    return lo, hi
