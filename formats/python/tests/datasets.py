"""Seeded random samples for the cross-language tests: keys that are non-ASCII, long and share prefixes; members
of 0 bytes to 1 MiB, some compressible (so LZ4 stores some framed, some not)."""
import random

PREFIXES = ['', 'a/', 'a/b/', 'dir/ü/', '😀/', 'n01440764/', 'n01440764/n0144/', 'Ω/ж/漢字/']
ALPHABET = 'abcxyz0189-_~ éüßжΩ漢字😀𝄞'
EXTS = ['bin', 'txt', 'seg.png', 'jpg', 'ü']


def random_key(rng: random.Random) -> str:
    n = rng.choice([1, 2, 5, 12, 30]) if rng.random() < 0.9 else rng.randint(60, 110)
    name = ''.join(rng.choice(ALPHABET) for _ in range(n)).strip() or 'k'
    return rng.choice(PREFIXES) + name


def random_member(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.05:
        size = rng.randint(100_000, 1 << 20)
    elif r < 0.1:
        size = 0
    else:
        size = rng.randint(1, 3000)
    if rng.random() < 0.5:  # compressible
        unit = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
        return (unit * (size // len(unit) + 1))[:size]
    return rng.randbytes(size) if hasattr(rng, 'randbytes') else bytes(rng.getrandbits(8) for _ in range(size))


def random_samples(seed: int, count: int):
    """[(key, {ext: bytes})] in key order, keys unique."""
    rng = random.Random(seed)
    keys = set()
    while len(keys) < count:
        keys.add(random_key(rng))
    samples = []
    for key in sorted(keys):  # str order is UTF-8 byte order: the order the index keeps
        exts = rng.sample(EXTS, rng.choice([1, 1, 1, 2, 3]))
        samples.append((key, {e: random_member(rng) for e in exts}))
    return samples
