"""Local shard and index files: opened read-only, read with os.pread (no shared file offset), kept open under a
bounded LRU per process (src/io/file-source.ts, src/io/handle-pool.ts)."""
import errno
import os
import stat
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
        raise ShardkitError(UNSAFE_PATH, f'{path} is not a regular file', file=path)
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


class HandlePool:
    """At most ``max_open`` open files, least recently used closed first. Belongs to one process: after a fork the
    child drops the parent's descriptors (closing its copies) and opens its own."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN):
        self.max_open = max_open
        self.handles: 'OrderedDict[str, int]' = OrderedDict()
        self.pid = os.getpid()
        self.opens = 0

    def fd(self, path: str, on_open=None) -> int:
        """The open descriptor of ``path``; ``on_open(fd, size)`` runs when it had to be opened."""
        if self.pid != os.getpid():
            self._forget()
        handles = self.handles
        fd = handles.get(path)
        if fd is not None:
            handles.move_to_end(path)
            return fd
        fd, size = open_file(path)
        self.opens += 1
        try:
            if on_open is not None:
                on_open(fd, size)
        except BaseException:
            os.close(fd)
            raise
        handles[path] = fd
        if len(handles) > self.max_open:
            _, old = handles.popitem(last=False)
            os.close(old)
        return fd

    def _forget(self):
        for fd in self.handles.values():
            try:
                os.close(fd)  # the child's copy only: the parent's stays open
            except OSError:
                pass
        self.handles = OrderedDict()
        self.pid = os.getpid()

    def close(self):
        if self.pid != os.getpid():
            self._forget()
            return
        for fd in self.handles.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.handles = OrderedDict()
