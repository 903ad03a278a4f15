"""Functions that run in worker processes (importable by spawned children)."""
import os

from conftest import digest


def read_positions(args):
    ds, positions = args
    return os.getpid(), [digest(ds[i]) for i in positions]


def read_in_child(ds, positions, queue):
    try:
        client = getattr(ds, '_client', None)
        before = client.connections_made if client is not None else 0
        inherited_maps = len(ds._maps)
        out = [digest(ds[i]) for i in positions]
        after = client.connections_made if client is not None else 0
        own = ds._pool.pid == os.getpid() if not ds.mmap else inherited_maps == 0 and ds.maps_made == len(ds._maps) > 0
        queue.put(('ok', out, after - before, ds._pool.open_fds(), own))
    except BaseException as e:  # report, never leave the parent waiting
        queue.put(('error', repr(e), 0, [], False))
