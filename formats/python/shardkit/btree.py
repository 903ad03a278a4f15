"""Lookups over the B+-tree index (formats/btree-reader.ts, SPEC "Invariants" and "Reading one sample").

Every descent checks page bounds, levels and subtree counts against the parent, and the leaf chain is checked
link by link (higher page numbers, key order), so a damaged or hostile index ends in CORRUPT_INDEX: never a loop,
a read outside the file or a wrong answer from a consistent-looking path.
"""
import operator
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from typing import Callable, Iterator, Optional, Tuple

from .errors import CORRUPT_INDEX, INVALID_ARG, OUT_OF_RANGE, ShardkitError, ShardkitIndexError
from .index_layout import IndexHeader, index_remedy
from .index_page import LeafPage, decode_page

DEFAULT_PAGE_CACHE_BYTES = 64 << 20


class BTree:
    """The index's pages through a bounded LRU of decoded pages; ``read_page(page_no)`` returns the page's bytes."""

    def __init__(self, header: IndexHeader, file: str, read_page: Callable[[int], bytes],
                 cache_bytes: int = DEFAULT_PAGE_CACHE_BYTES):
        self.header = header
        self.file = file
        self.read_page = read_page
        self.capacity = max(16, cache_bytes // header.page_size)
        self.cache: 'OrderedDict[int, object]' = OrderedDict()
        self.directory: Tuple[list, list] = ([], [])
        """(first positions, leaves) of the leaves reached by a checked descent, sorted by position: a positional
        lookup that lands in one is a bisect, not a descent. Replaced whole (never changed in place), so a reader
        in another thread sees a consistent pair; emptied when the cache evicts a page, so it holds cached leaves
        only and the cache's bound is the only bound on memory."""
        self.key_directory: Tuple[list, list] = ([], [])
        """(lows, (high, leaf, first position) entries), sorted by low: the keys ``low <= key < high`` (no high: no
        bound) are exactly those a descent routes to that leaf, learnt from descents that ended in it; a key lookup
        that falls in one is a bisect, not a descent. Replaced whole and emptied as ``directory`` is."""

    def _corrupt(self, page_no: int, why: str):
        raise ShardkitError(CORRUPT_INDEX, f'{self.file}: page {page_no} {why}; {index_remedy(self.header.layout)}',
                            file=self.file)

    def page(self, page_no: int):
        cache = self.cache
        page = cache.get(page_no)
        if page is not None:
            try:
                cache.move_to_end(page_no)
            except KeyError:  # another thread evicted it just now
                pass
            return page
        page = decode_page(self.read_page(page_no), page_no, self.file, self.header.layout)
        cache[page_no] = page
        if len(cache) > self.capacity:
            cache.popitem(last=False)
            self.directory = ([], [])
            self.key_directory = ([], [])
        return page

    def _remember(self, leaf: LeafPage, base: int) -> None:
        starts, leaves = self.directory
        i = bisect_left(starts, base)
        if i == len(starts) or starts[i] != base:
            self.directory = (starts[:i] + [base] + starts[i:], leaves[:i] + [leaf] + leaves[i:])

    def _descend(self, page_no: int, level: int, count: int):
        """The page a parent promised: inside the index, of the right type and level, holding ``count`` samples."""
        if page_no < 1 or page_no >= self.header.page_count:
            self._corrupt(page_no, 'is outside the index')
        page = self.page(page_no)
        if level == 0:
            if not page.is_leaf:
                self._corrupt(page_no, 'should be a leaf')
            if len(page.keys) != count:
                self._corrupt(page_no, f'holds {len(page.keys)} samples, its parent says {count}')
        else:
            if page.is_leaf or page.level != level:
                self._corrupt(page_no, f'should be a branch at level {level}')
            if page.starts[-1] != count:
                self._corrupt(page_no, f'holds {page.starts[-1]} samples, its parent says {count}')
        return page

    def _remember_keys(self, low: str, high: Optional[str], leaf: LeafPage, base: int) -> None:
        """Records that descents route ``low <= key < high`` to ``leaf``, when the leaf's keys lie in that range (a
        hostile leaf outside it is only ever reached by descents, which answer as the Node reader does)."""
        keys = leaf.keys
        if keys[0] < low or (high is not None and keys[-1] >= high):
            return
        lows, entries = self.key_directory
        i = bisect_left(lows, low)
        if i == len(lows) or lows[i] != low:
            self.key_directory = (lows[:i] + [low] + lows[i:], entries[:i] + [(high, leaf, base)] + entries[i:])

    def leaf_for_key(self, key: str) -> Optional[Tuple[LeafPage, int]]:
        """The leaf that would hold ``key`` and the position of its first sample (None when the index is empty)."""
        lows, entries = self.key_directory
        i = bisect_right(lows, key) - 1
        if i >= 0:
            high, leaf, base = entries[i]
            if high is None or key < high:
                return leaf, base
        h = self.header
        if h.entry_count == 0:
            return None
        page_no, level, base, count = h.root_page, h.height - 1, 0, h.entry_count
        cache = self.cache
        page_count = h.page_count
        low, high = '', None  # the keys routed to this page: every key ('' is the least str) at the root
        while True:
            # the checks of _descend, inline for cached pages, as in leaf_at
            page = cache.get(page_no) if 0 < page_no < page_count else None
            if (page is None or page.is_leaf != (level == 0) or (level and page.level != level)
                    or (len(page.keys) if level == 0 else page.starts[-1]) != count):
                page = self._descend(page_no, level, count)
            if level == 0:
                self._remember_keys(low, high, page, base)
                return page, base
            keys = page.keys
            i = bisect_right(keys, key) - 1
            if i < 0:
                i = 0  # keys below the first separator go to the first child too
            if i > 0 and keys[i] > low:
                low = keys[i]
            if i + 1 < len(keys) and (high is None or keys[i + 1] < high):
                high = keys[i + 1]
            starts = page.starts
            page_no, level, base, count = page.children[i], level - 1, base + starts[i], starts[i + 1] - starts[i]

    def find(self, key: str) -> Optional[Tuple[LeafPage, int, int]]:
        """(leaf, slot, position) of ``key``, or None."""
        hit = self.leaf_for_key(key)
        if hit is None:
            return None
        leaf, base = hit
        slots = leaf.key_slots
        if slots is None:
            slots = self.slots(leaf)
        slot = slots.get(key)
        return None if slot is None else (leaf, slot, base + slot)

    @staticmethod
    def slots(leaf: LeafPage) -> dict:
        """key -> slot of a leaf, built on its first key lookup."""
        slots = leaf.key_slots = {k: i for i, k in enumerate(leaf.keys)}
        return slots

    def lower_bound(self, key: str) -> int:
        """Position of the first key >= ``key`` (entry_count when none)."""
        hit = self.leaf_for_key(key)
        if hit is None:
            return 0
        leaf, base = hit
        return base + bisect_left(leaf.keys, key)

    def leaf_at(self, position) -> Tuple[LeafPage, int]:
        """The leaf holding ``position`` (0 <= position < entry_count) and its first sample's position."""
        if type(position) is int:
            starts, leaves = self.directory
            i = bisect_right(starts, position) - 1
            if i >= 0:
                base = starts[i]
                leaf = leaves[i]
                if position - base < len(leaf.keys):
                    return leaf, base
        else:
            try:
                if isinstance(position, bool):
                    raise TypeError
                position = operator.index(position)  # numpy's integers, a one-element tensor
            except TypeError:
                raise ShardkitError(INVALID_ARG, f'Expected an integer for position but received {position!r}') from None
        h = self.header
        if position < 0 or position >= h.entry_count:
            raise ShardkitIndexError(OUT_OF_RANGE, f'position {position} is outside [0, {h.entry_count})',
                                     file=self.file)
        leaf, base = self._leaf_by_descent(position)
        self._remember(leaf, base)
        return leaf, base

    def _leaf_by_descent(self, position: int) -> Tuple[LeafPage, int]:
        """leaf_at's checked descent from the root (0 <= position < entry_count)."""
        h = self.header
        page_no, level, base, count = h.root_page, h.height - 1, 0, h.entry_count
        cache = self.cache
        page_count = h.page_count
        while True:
            # the checks of _descend, inline: this loop runs for every random read
            page = cache.get(page_no) if 0 < page_no < page_count else None
            if page is None or page.is_leaf != (level == 0) or (level and page.level != level):
                page = self._descend(page_no, level, count)
            elif (len(page.keys) if level == 0 else page.starts[-1]) != count:
                page = self._descend(page_no, level, count)  # raises with the message
            if level == 0:
                return page, base
            starts = page.starts
            i = bisect_right(starts, position - base, 0, len(starts) - 1) - 1
            page_no, level, base, count = page.children[i], level - 1, base + starts[i], starts[i + 1] - starts[i]

    def load_positions(self) -> bool:
        """Decodes every leaf, each reached by a checked descent, and fills the positional directory with all of
        them at once, so that no positional lookup decodes or descends again: when the whole index fits the page
        cache (returns False, doing nothing, otherwise). A process that forks afterwards (a DataLoader's workers)
        inherits the decoded leaves. Costs about as much as decoding each leaf on its first read."""
        h = self.header
        if h.page_count > self.capacity:
            return False
        starts, leaves = [], []
        position = 0
        while position < h.entry_count:
            leaf, base = self._leaf_by_descent(position)
            if not base <= position < base + len(leaf.keys):  # cannot happen after a checked descent; never loop
                return False
            starts.append(base)
            leaves.append(leaf)
            position = base + len(leaf.keys)
        if len(self.cache) <= self.capacity:  # no page was evicted meanwhile (another thread reading)
            self.directory = (starts, leaves)
        return True

    def next_leaf(self, leaf: LeafPage) -> LeafPage:
        """The leaf after ``leaf`` along the links: a higher page, a leaf, first key after ``leaf``'s last."""
        def bad(why):
            raise ShardkitError(CORRUPT_INDEX, f'{self.file}: leaf {leaf.page_no} {why}; '
                                f'{index_remedy(self.header.layout)}', file=self.file)
        if leaf.next == 0 or leaf.next >= self.header.page_count:
            bad(f'links to page {leaf.next}')
        nxt = self.page(leaf.next)
        if not nxt.is_leaf:
            bad(f'links to page {leaf.next}, which is not a leaf')
        if nxt.keys[0] <= leaf.keys[-1]:
            bad('links to a leaf out of key order')
        return nxt

    def scan(self, lo: int, hi: int) -> Iterator[Tuple[LeafPage, int]]:
        """(leaf, slot) for positions lo..hi-1 in order: one descent, then along the leaf chain."""
        if lo >= hi:
            return
        leaf, base = self.leaf_at(lo)
        slot = lo - base
        while True:
            stop = min(len(leaf.keys), hi - base)
            for i in range(slot, stop):
                yield leaf, i
            base += len(leaf.keys)
            if base >= hi:
                return
            leaf = self.next_leaf(leaf)
            slot = 0

    def scan_reverse(self, lo: int, hi: int) -> Iterator[Tuple[LeafPage, int]]:
        """(leaf, slot) for positions hi-1 down to lo: one descent per leaf (leaves link forward only)."""
        pos = hi - 1
        while pos >= lo:
            leaf, base = self.leaf_at(pos)
            stop = max(0, lo - base)
            for i in range(pos - base, stop - 1, -1):
                yield leaf, i
            pos = base + stop - 1
