"""A batch of samples that crosses to another process through shared memory instead of a pipe (Linux).

Moving a batch through a ``multiprocessing`` queue, as a DataLoader does, pickles it (a copy), writes it through a
64 KiB pipe (a wakeup of both processes per 64 KiB) and reads it back into a buffer the receiver unpickles (two
more copies). A :class:`SharedBatch` pickled by ``multiprocessing``'s ForkingPickler instead copies each sample's
``bytes`` values once into a ring of shared memory owned by the sending process, and pickles only their lengths;
the receiver copies them out, once, into new ``bytes`` objects and frees their room. The receiver gets a plain
list of samples equal to the one sent: the transport changes no type and no value.

The ring: an anonymous memory file (``memfd``: no name to leak, freed with the last process that maps it) of
``RING_HEADER_BYTES`` then ``capacity`` bytes, written by one process and read by any process of the same user,
which opens it through ``/proc/<pid>/fd/<fd>``. A message is a ``MESSAGE_HEADER_BYTES`` flag, which the reader
clears once it copied the values out, then the values. The writer keeps its messages in the order it wrote them and
reuses room only up to the first message not read yet, so messages read in any order (several queues) are never
overwritten early; a message that would cross the ring's end starts at its beginning instead. A batch that does
not fit the free room (or any batch on a system without ``memfd`` and ``/proc``) goes through the pipe as before:
the ring never waits, so it cannot deadlock.

Plain ``pickle`` (``pickle.dump`` to a file) pickles a SharedBatch as the list it is: only ForkingPickler, which
multiprocessing and PyTorch use between live processes, takes the shared-memory path.
"""
import mmap
import os
from collections import deque
import struct
import threading
from multiprocessing.reduction import ForkingPickler
from typing import Any, Dict, List, Optional, Tuple

from .errors import IO, ShardkitError

__all__ = ['SharedBatch', 'DEFAULT_RING_BYTES']

DEFAULT_RING_BYTES = 8 << 20
"""Ring capacity per sending process: about 5 batches of 64 samples of 25 KiB (a DataLoader keeps about 2 per
worker in flight); pages are touched only as far as messages in flight reach."""
RING_MAGIC = b'SKBATCH1'
RING_HEADER_BYTES = 64
"""magic (8 bytes), token (16 bytes, random: tells a ring from another behind a reused pid and fd), capacity (u64
at CAPACITY_AT); the rest is zero. Messages follow, at RING_HEADER_BYTES + (ring position mod capacity)."""
TOKEN_AT, TOKEN_BYTES = 8, 16
CAPACITY_AT = 24
MESSAGE_HEADER_BYTES = 8
"""A message's flag (u64): its ring position + 1 while unread, 0 once read (so a pickle loaded twice, or one
whose room was reused, is refused, not read)."""
READ = 0
_U64 = struct.Struct('<Q')
MAX_ATTACHED_RINGS = 64
"""Rings a receiving process keeps mapped (the rings of exited senders are dropped first)."""


class SharedBatch(list):
    """A list of samples whose ``bytes`` (the samples themselves, or the values of ``dict`` samples such as
    ``{'__key__': key, ext: bytes, ...}``) travel through shared memory when multiprocessing pickles it; any other
    object is pickled as usual. ``ring_bytes``: the capacity of the sending process's ring."""

    __slots__ = ('ring_bytes',)

    def __init__(self, samples=(), ring_bytes: int = DEFAULT_RING_BYTES):
        super().__init__(samples)
        self.ring_bytes = ring_bytes

    def __reduce__(self):  # plain pickle: the list it is (ForkingPickler uses _reduce_shared_batch instead)
        return list, (list(self),)


class _WriterRing:
    """This process's ring."""

    def __init__(self, capacity: int):
        self.pid = os.getpid()
        self.fd = os.memfd_create('shardkit-batches', os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, RING_HEADER_BYTES + capacity)
            self.map = mmap.mmap(self.fd, RING_HEADER_BYTES + capacity)
        except BaseException:
            os.close(self.fd)
            raise
        self.token = os.urandom(TOKEN_BYTES)
        self.map[:8] = RING_MAGIC
        self.map[TOKEN_AT:TOKEN_AT + TOKEN_BYTES] = self.token
        _U64.pack_into(self.map, CAPACITY_AT, capacity)
        self.capacity = capacity
        self.head = 0
        """Bytes reserved since the ring was made (a ring position: its offset is the position mod capacity)."""
        self.unread: 'deque[int]' = deque()
        """Positions of the messages not known to be read yet, in the order they were written."""
        self.lock = threading.Lock()

    def reserve(self, size: int) -> Optional[int]:
        """The ring position of a new message of ``size`` bytes (header included), its flag cleared; None when it
        does not fit the free room now."""
        capacity = self.capacity
        if size > capacity:
            return None
        unread = self.unread
        m = self.map
        while unread and _U64.unpack_from(m, RING_HEADER_BYTES + unread[0] % capacity)[0] == READ:
            unread.popleft()
        start = self.head
        if not unread or start % capacity + size > capacity:
            # every message read (the receiver keeps up): start again at the ring's beginning, so that only as much
            # of the ring is ever touched as is in flight (fresh shared memory costs a page fault per 4 KiB); or
            # wrap, as the message would cross the ring's end
            start += -start % capacity
        if unread and start + size - unread[0] > capacity:  # it would overwrite the oldest unread message
            return None
        _U64.pack_into(m, RING_HEADER_BYTES + start % capacity, start + 1)
        unread.append(start)
        self.head = start + size
        return start


_rings: Dict[int, _WriterRing] = {}
"""This process's rings, by capacity (one in practice)."""
_rings_pid = os.getpid()
_rings_lock = threading.Lock()
_ring_unavailable = not (hasattr(os, 'memfd_create') and os.path.isdir('/proc/self/fd'))


def _writer_ring(capacity: int) -> Optional[_WriterRing]:
    global _rings, _rings_pid, _ring_unavailable
    if _rings_pid == os.getpid():
        ring = _rings.get(capacity)
        if ring is not None:
            return ring
    if _ring_unavailable:
        return None
    with _rings_lock:
        if _rings_pid != os.getpid():
            _rings, _rings_pid = {}, os.getpid()  # a forked child never writes into its parent's rings
        ring = _rings.get(capacity)
        if ring is None:
            try:
                ring = _rings[capacity] = _WriterRing(capacity)
            except OSError:
                _ring_unavailable = True  # memfd refused (a seccomp profile, no memory): the pipe, as without it
                return None
    return ring


def _layout(samples: List[Any]) -> Tuple[list, List[bytes]]:
    """Per sample: ``(names, lengths, others)`` for a dict (length -1: the value is the next of ``others``),
    ``(None, length, None)`` for a bytes object, ``(None, -1, sample)`` for anything else; and the bytes values in
    ring order."""
    layout, values = [], []
    for sample in samples:
        if type(sample) is not dict:
            if type(sample) is bytes:
                layout.append((None, len(sample), None))
                values.append(sample)
            else:
                layout.append((None, -1, sample))
            continue
        names, lengths, others = [], [], []
        for name, value in sample.items():
            names.append(name)
            if type(value) is bytes:
                lengths.append(len(value))
                values.append(value)
            else:
                lengths.append(-1)
                others.append(value)
        layout.append((names, lengths, others))
    return layout, values


def _reduce_shared_batch(batch: SharedBatch):
    ring = _writer_ring(batch.ring_bytes)
    if ring is None:
        return list, (list(batch),)
    layout, values = _layout(batch)
    total = sum(map(len, values))
    with ring.lock:
        start = ring.reserve(MESSAGE_HEADER_BYTES + total)
        if start is None:
            return list, (list(batch),)
        at = RING_HEADER_BYTES + start % ring.capacity + MESSAGE_HEADER_BYTES
        m = ring.map
        for value in values:
            end = at + len(value)
            m[at:end] = value
            at = end
    return _receive, (ring.pid, ring.fd, ring.token, start, total, layout)


ForkingPickler.register(SharedBatch, _reduce_shared_batch)


class _ReaderRing:
    def __init__(self, pid: int, fd: int, token: bytes):
        path = f'/proc/{pid}/fd/{fd}'
        try:
            own = os.open(path, os.O_RDWR)
        except OSError as err:
            raise ShardkitError(IO, f'Cannot open the shared memory of the process {pid} that sent a batch ({path}: '
                                f'{err.strerror}); give shared_memory=False to send batches through the pipe') from None
        try:
            self.map = mmap.mmap(own, os.fstat(own).st_size)
        except (OSError, ValueError):  # another file behind a reused pid and descriptor
            self.map = None
        finally:
            os.close(own)
        if (self.map is None or len(self.map) < RING_HEADER_BYTES or self.map[:8] != RING_MAGIC
                or self.map[TOKEN_AT:TOKEN_AT + TOKEN_BYTES] != token):
            if self.map is not None:
                self.map.close()
            raise ShardkitError(IO, f'The process {pid} that sent a batch exited before it arrived (its shared '
                                'memory is gone)')
        self.pid = pid
        self.token = token
        self.capacity = _U64.unpack_from(self.map, CAPACITY_AT)[0]


_attached: Dict[Tuple[int, int], _ReaderRing] = {}
_attach_lock = threading.Lock()


def _reader_ring(pid: int, fd: int, token: bytes) -> _ReaderRing:
    ring = _attached.get((pid, fd))
    if ring is not None and ring.token == token:
        return ring
    with _attach_lock:
        ring = _ReaderRing(pid, fd, token)
        if len(_attached) >= MAX_ATTACHED_RINGS // 2:
            for key in [k for k in _attached if not _alive(k[0])]:
                del _attached[key]
            while len(_attached) >= MAX_ATTACHED_RINGS:
                del _attached[next(iter(_attached))]
        _attached[(pid, fd)] = ring
    return ring


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _receive(pid: int, fd: int, token: bytes, start: int, total: int, layout: list) -> list:
    """Unpickling a SharedBatch: the samples, their bytes copied out of the sender's ring, whose room is then freed."""
    ring = _reader_ring(pid, fd, token)
    m = ring.map
    flag = RING_HEADER_BYTES + start % ring.capacity
    at = flag + MESSAGE_HEADER_BYTES
    if at + total > len(m) or _U64.unpack_from(m, flag)[0] != start + 1:
        raise ShardkitError(IO, f'A batch from process {pid} was read already (a pickle of a SharedBatch is loaded '
                            'once) or points outside its shared memory')
    out = []
    for names, lengths, others in layout:
        if names is None:
            if lengths < 0:
                out.append(others)
            else:
                end = at + lengths
                out.append(m[at:end])
                at = end
            continue
        sample = {}
        other = iter(others)
        for name, length in zip(names, lengths):
            if length < 0:
                sample[name] = next(other)
            else:
                end = at + length
                sample[name] = m[at:end]
                at = end
        out.append(sample)
    _U64.pack_into(m, flag, READ)  # its room may be reused now
    return out
