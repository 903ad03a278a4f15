"""Read coalescing (src/read/fetch-plan.ts): the spans one batch needs, as few positional reads as possible.

Spans of one shard whose gap is at most ``gap_bytes`` share a read while it stays within ``max_read_bytes``; a span
starting inside a run always joins it (a padded epoch may repeat a sample), so no byte is read twice. A span's
slice of its read is exactly what reading it alone returns; a span is never split.
"""
from typing import List, NamedTuple, Sequence, Tuple

DEFAULT_COALESCE_GAP_BYTES = 64 * 1024
"""Over http(s): a round trip costs far more than 64 KiB of bandwidth."""
DEFAULT_LOCAL_COALESCE_GAP_BYTES = 1024
"""Locally: only neighbours a tar header and its padding apart (copying larger holes costs more than a read)."""
DEFAULT_MAX_READ_BYTES = 1024 * 1024


class ReadRun(NamedTuple):
    shard: int
    offset: int
    length: int
    slices: List[Tuple[int, int, int]]
    """(request index, start inside the read, length) of each span the read serves."""


def plan_reads(requests: Sequence[Tuple[int, int, int]], gap_bytes: int, max_read_bytes: int) -> List[ReadRun]:
    """Runs ordered by (shard, offset) for ``requests`` of (shard, offset, length); each request is in exactly one
    run's slices."""
    order = sorted([(r[0], r[1], -r[2], i) for i, r in enumerate(requests)])
    runs: List[ReadRun] = []
    shard = -1
    run_offset = run_end = 0
    slices = None
    for s, offset, length, i in order:
        length = -length
        end = offset + length
        if slices is not None and s == shard and (
                offset < run_end or (offset - run_end <= gap_bytes and end - run_offset <= max_read_bytes)):
            if end > run_end:
                run_end = end
            slices.append((i, offset - run_offset, length))
            continue
        if slices is not None:
            runs.append(ReadRun(shard, run_offset, run_end - run_offset, slices))
        shard, run_offset, run_end, slices = s, offset, end, [(i, 0, length)]
    if slices is not None:
        runs.append(ReadRun(shard, run_offset, run_end - run_offset, slices))
    return runs
