"""Seeded pseudo-random numbers for the shuffles, as formats/SPEC.md "Hashes and the PRNG" defines them.

xoshiro128** (Blackman & Vigna) seeded through SplitMix64, and FNV-1a 64 to turn string seeds and salts into
numbers: the same generators as src/read/shuffle/prng.ts, output for output. Not cryptographic: whoever knows
the seed knows the order, which is the point.

>>> rng = rng_for(42, 1, 'full')
>>> [rng.next_uint32() for _ in range(2)]
[4093326504, 78374408]
"""
from typing import Union

Seed = Union[int, str]
"""A safe integer (abs(seed) <= 2**53 - 1) or any string."""

U32_MASK = 0xFFFFFFFF
U64_MASK = 0xFFFFFFFFFFFFFFFF
GOLDEN_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment: 2^64 / golden ratio, odd
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MAX_SAFE_INTEGER = 2 ** 53 - 1
# Distinct domains so the number 5 and the string "5" give unrelated streams.
NUMBER_SEED_DOMAIN = 0x6E756D6265727365  # "numberse"
STRING_SEED_DOMAIN = 0x737472696E677365  # "stringse"


def mix64(value: int) -> int:
    """SplitMix64's output function (Stafford's "Mix13"), a bijection on 64-bit values."""
    z = value & U64_MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64_MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64_MASK
    return z ^ (z >> 31)


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64 over bytes."""
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & U64_MASK
    return h


def js_utf8(text: str) -> bytes:
    """UTF-8 bytes of a string as JavaScript's TextEncoder gives them.

    A JavaScript string is UTF-16: a surrogate pair given as two code points is one character, and a lone
    surrogate becomes U+FFFD. Python strings without surrogates encode as usual.
    """
    try:
        return text.encode('utf-8')
    except UnicodeEncodeError:
        return text.encode('utf-16-le', 'surrogatepass').decode('utf-16-le', 'replace').encode('utf-8')


def fnv1a64_string(text: str) -> int:
    """FNV-1a 64 of a string's UTF-8 bytes (see :func:`js_utf8`)."""
    return fnv1a64(js_utf8(text))


def seed_for(seed: Seed, epoch: int, salt: str = '') -> int:
    """Mixes a user seed, an epoch and a salt (which algorithm, which stage) into one 64-bit seed.

    Callers validate ``seed`` and ``epoch`` first.

    >>> hex(seed_for(42, 1, 'full'))
    '0xfb0f52af9f937fdc'
    """
    if isinstance(seed, str):
        h = mix64(fnv1a64_string(seed) ^ STRING_SEED_DOMAIN)
    else:
        h = mix64((seed & U64_MASK) ^ NUMBER_SEED_DOMAIN)  # a negative seed as its two's complement
    h = mix64(h ^ mix64(epoch + GOLDEN_GAMMA))
    return mix64(h ^ fnv1a64_string(salt))


class SplitMix64:
    """SplitMix64 (Steele, Lea & Flood): expands one 64-bit seed into xoshiro's 128-bit state."""

    def __init__(self, seed: int):
        self.state = seed & U64_MASK

    def next(self) -> int:
        self.state = (self.state + GOLDEN_GAMMA) & U64_MASK
        return mix64(self.state)


class Xoshiro128StarStar:
    """xoshiro128**: 128-bit state, 32-bit outputs. ``state`` is the four words (s0, s1, s2, s3).

    The shuffles' hot loop (:func:`shardkit.fisher_yates.fisher_yates`) inlines :meth:`next_uint32` and
    :meth:`next_below`; change them together.
    """

    __slots__ = ('state',)

    def __init__(self, s0: int, s1: int, s2: int, s3: int):
        state = (s0 & U32_MASK, s1 & U32_MASK, s2 & U32_MASK, s3 & U32_MASK)
        if state == (0, 0, 0, 0):
            # The all-zero state is the generator's one fixed point: it would output zeros forever.
            raise ValueError('xoshiro128** state must not be all zero')
        self.state = state

    @classmethod
    def from_seed(cls, seed: int) -> 'Xoshiro128StarStar':
        """Seeds with two SplitMix64 outputs, low then high word of each."""
        sm = SplitMix64(seed)
        a = sm.next()
        b = sm.next()
        return cls(a & U32_MASK, a >> 32, b & U32_MASK, b >> 32)

    def next_uint32(self) -> int:
        """The next output, uniform in [0, 2^32)."""
        s0, s1, s2, s3 = self.state
        x = (s1 * 5) & U32_MASK
        result = ((((x << 7) | (x >> 25)) & U32_MASK) * 9) & U32_MASK
        t = (s1 << 9) & U32_MASK
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 11) | (s3 >> 21)) & U32_MASK
        self.state = (s0, s1, s2, s3)
        return result

    def next_below(self, n: int) -> int:
        """A uniform integer in [0, n) without modulo bias, 1 <= n <= 2^53 (Lemire's method up to 2^32)."""
        if n > 1 << 32:
            return self._next_below_wide(n)
        m = self.next_uint32() * n
        low = m & U32_MASK
        if low < n:
            threshold = ((1 << 32) - n) % n  # 2^32 mod n: how many low words would bias the result
            while low < threshold:
                m = self.next_uint32() * n
                low = m & U32_MASK
        return m >> 32

    def _next_below_wide(self, n: int) -> int:
        span = 1 << 53
        limit = span - span % n
        while True:
            r = (self.next_uint32() >> 11) * (1 << 32) + self.next_uint32()  # 21 + 32 = 53 uniform bits
            if r < limit:
                return r % n


def rng_for(seed: Seed, epoch: int, salt: str) -> Xoshiro128StarStar:
    """The generator for one (seed, epoch, salt): the only way the shuffles get randomness."""
    return Xoshiro128StarStar.from_seed(seed_for(seed, epoch, salt))
