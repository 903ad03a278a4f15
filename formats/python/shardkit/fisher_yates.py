"""Fisher–Yates (Durstenfeld) shuffle in place, drawing from a shared xoshiro128** generator (formats/SPEC.md)."""
from typing import MutableSequence

from .prng import U32_MASK, Xoshiro128StarStar


def fisher_yates(array: MutableSequence[int], start: int, end: int, rng: Xoshiro128StarStar) -> None:
    """Shuffles ``array[start:end]`` in place: for i from end-1 down to start+1, swap a[i] with
    a[start + rng.next_below(i - start + 1)].

    The generator is inlined (the shuffles' hot loop: one call per sample would double the time); its state is
    written back, so a generator shared by several calls (block's windows) continues where it stopped.
    """
    s0, s1, s2, s3 = rng.state
    for i in range(end - 1, start, -1):
        n = i - start + 1
        while True:
            x = (s1 * 5) & U32_MASK
            x = ((((x << 7) | (x >> 25)) & U32_MASK) * 9) & U32_MASK
            t = (s1 << 9) & U32_MASK
            s2 ^= s0
            s3 ^= s1
            s1 ^= s2
            s0 ^= s3
            s2 ^= t
            s3 = ((s3 << 11) | (s3 >> 21)) & U32_MASK
            m = x * n
            # Lemire: reject the few low words that would bias the result ((2^32 - n) % n of them).
            if (m & U32_MASK) >= n or (m & U32_MASK) >= ((1 << 32) - n) % n:
                break
        j = start + (m >> 32)
        array[i], array[j] = array[j], array[i]
    rng.state = (s0, s1, s2, s3)
