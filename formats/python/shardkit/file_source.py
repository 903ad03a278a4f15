"""Local shard and index files: opened read-only, read with os.pread (no shared file offset), kept open under a
bounded LRU per process (src/io/file-source.ts, src/io/handle-pool.ts)."""
import errno
import os
import stat
import threading
import weakref
from collections import OrderedDict

from .errors import IO, SHARD_MISSING, TRUNCATED, UNSAFE_PATH, ShardkitError

DEFAULT_MAX_OPEN = 64
_OPEN_FLAGS = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_CLOEXEC', 0)


def open_file(path: str):
    """(fd, size) of a regular file. Missing: SHARD_MISSING; not a regular file: UNSAFE_PATH; else IO. Non-blocking,
    so a FIFO put where a shard should be is refused at once instead of waiting for a writer."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            raise ShardkitError(SHARD_MISSING, f'{path} does not exist ({errno.errorcode[err.errno]}); restore the '
                                'missing file or re-pack the dataset', file=path) from None
        hint = '; lower max_open_shards or raise ulimit -n' if err.errno in (errno.EMFILE, errno.ENFILE) else ''
        raise ShardkitError(IO, f'Cannot open {path}: {err.strerror}{hint}', file=path) from None
    try:
        st = os.fstat(fd)
    except OSError as err:
        os.close(fd)
        raise ShardkitError(IO, f'Cannot stat {path}: {err.strerror}', file=path) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ShardkitError(UNSAFE_PATH, f'{path} is not a regular file (a FIFO, device or directory is never read as '
                            'one)', file=path)
    return fd, st.st_size


def pread_exact(fd: int, offset: int, length: int, name: str) -> bytes:
    """``length`` bytes at ``offset``: one pread (a loop only if the kernel returns less), TRUNCATED at EOF."""
    try:
        data = os.pread(fd, length, offset)
        if len(data) < length:
            parts = [data]
            got = len(data)
            while got < length:
                more = os.pread(fd, length - got, offset + got)
                if not more:
                    raise ShardkitError(TRUNCATED, f'{name} is truncated: needed {length} bytes at offset {offset} '
                                        f'but the file ends at {offset + got}', file=name, offset=offset)
                parts.append(more)
                got += len(more)
            data = b''.join(parts)
    except OSError as err:
        raise ShardkitError(IO, f'Cannot read {name} at offset {offset}: {err.strerror}', file=name,
                            offset=offset) from None
    return data


_pools: 'weakref.WeakSet[HandlePool]' = weakref.WeakSet()
_generation = 0
"""How many forks this process descends from (a compare per read, where os.getpid() is a system call)."""


def _after_fork_in_child():
    global _generation
    _generation += 1
    # a lock another thread held at the fork stays held forever in the child: each pool gets a fresh one
    for pool in list(_pools):
        pool._lock = threading.Lock()


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class HandlePool:
    """At most ``max_open`` open files, least recently used closed first; thread-safe. A file in use by a read
    (between :meth:`acquire` and :meth:`release`) is never closed under it: when every open file is in use, the pool
    goes over ``max_open`` until they are released. Belongs to one process: after a fork the child drops the
    parent's descriptors (closing its copies) and opens its own."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN):
        self.max_open = max_open
        self.handles: 'OrderedDict[str, list]' = OrderedDict()
        """path -> [fd, reads in progress]"""
        self.pid = os.getpid()
        self.generation = _generation
        self.opens = 0
        self._lock = threading.Lock()
        _pools.add(self)

    def __getstate__(self):
        return {'max_open': self.max_open}

    def __setstate__(self, state):
        self.__init__(state['max_open'])

    def acquire(self, path: str, on_open=None) -> int:
        """The open descriptor of ``path``, held until :meth:`release`; ``on_open(fd, size)`` runs when it had to be
        opened (a failure there closes it and raises)."""
        with self._lock:
            if self.generation != _generation:
                self._forget()
            handles = self.handles
            handle = handles.get(path)
            if handle is not None:
                handle[1] += 1
                if len(handles) > 1:
                    handles.move_to_end(path)
                return handle[0]
        fd, size = open_file(path)  # outside the lock: an open may be slow (network file systems)
        try:
            if on_open is not None:
                on_open(fd, size)
        except BaseException:
            os.close(fd)
            raise
        with self._lock:
            self.opens += 1
            handle = self.handles.get(path)
            if handle is not None:  # another thread opened it meanwhile: use theirs
                os.close(fd)
                handle[1] += 1
                return handle[0]
            self.handles[path] = [fd, 1]
            self._evict()
            return fd

    def pread(self, path: str, offset: int, length: int, on_open=None) -> bytes:
        """:func:`pread_exact` of ``path`` between :meth:`acquire` and :meth:`release`, in one call: the path every
        local sample read takes."""
        handle = None
        with self._lock:
            if self.generation == _generation:
                handle = self.handles.get(path)
                if handle is not None:
                    handle[1] += 1
                    if len(self.handles) > 1:
                        self.handles.move_to_end(path)
        if handle is None:
            fd = self.acquire(path, on_open)
            handle = self.handles[path]  # acquire holds it: it stays until the release below
        else:
            fd = handle[0]
        try:
            try:
                data = os.pread(fd, length, offset)
            except OSError:
                data = b''
            if len(data) != length:  # short or failed: pread_exact retries and names the error
                data = pread_exact(fd, offset, length, path)
        finally:
            with self._lock:
                handle[1] -= 1
                if len(self.handles) > self.max_open:
                    self._evict()
        return data

    def release(self, path: str) -> None:
        with self._lock:
            handle = self.handles.get(path)
            if handle is not None:
                handle[1] -= 1
                self._evict()

    def _evict(self):
        if len(self.handles) <= self.max_open:
            return
        for path in list(self.handles):
            handle = self.handles[path]
            if handle[1] == 0:
                del self.handles[path]
                os.close(handle[0])
                if len(self.handles) <= self.max_open:
                    return

    def open_fds(self):
        """Descriptors open in this process (for tests)."""
        return sorted(h[0] for h in self.handles.values())

    def _forget(self):
        for handle in self.handles.values():
            try:
                os.close(handle[0])  # the child's copy only: the parent's stays open
            except OSError:
                pass
        self.handles = OrderedDict()
        self.pid = os.getpid()
        self.generation = _generation

    def close(self):
        with self._lock:
            if self.generation != _generation:
                self._forget()
                return
            for handle in self.handles.values():
                try:
                    os.close(handle[0])
                except OSError:
                    pass
            self.handles = OrderedDict()
