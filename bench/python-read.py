#!/usr/bin/python3
"""Python random reads of a shardkit dataset against open().read() of the raw files and py-lmdb's txn.get, on the
same samples: generated files of 1-100 KiB (log-uniform sizes of random bytes), or a real tree (--real A|B: a Linux
distribution's own data, see bench/real-trees.mjs; --tree DIR: any directory), random order, warm page cache,
checksums verified. A sample is the files that share a key (most samples are one file); every side reads all of them.

Each side runs in its own child process (one untimed pass to warm the page cache and the index pages, then a timed
pass over every sample in a seeded random order); sides alternate round by round. Every side reports wall time and
CPU time (its process, plus its DataLoader workers); ratios are taken within a round, and the figures are their
medians with the lowest and highest round. The machine may be shared: read the ratios (CPU ratios are the steadier
ones under load), not the absolute rates.

Parts (--parts, comma-separated):
- reads: ds[i] and ds.get(key), checksums verified (and ds[i] without, and ds[i] through os.pread instead of memory
  maps: mmap=False), vs open().read() and py-lmdb txn.get.
- loader: --epochs epochs (3) of DataLoader(num_workers=2, batch_size=64, shuffle, collate_fn=list_collate) over
  shardkit.torch.ShardkitDataset vs a minimal raw-file Dataset vs a py-lmdb Dataset (one txn per batch), no decode;
  and over a Dataset that reads nothing (bytes of each sample's size made in memory): the DataLoader's own cost.
  Every side delivers the same bytes to the loop, as a list of 64 bytes objects per batch (shardkit: in
  WebDataset's dicts). The '-shm' sides send their batches to the main process through shared memory
  (shardkit.shared_batch.SharedBatch: ShardkitDataset(shared_memory=True), and the same class returned by the
  raw-file and read-nothing Datasets' __getitems__, to show what the transport gives any Dataset); the others
  through the DataLoader's pipe (pickled). The 'Ceiling' ratios (the Dataset that reads nothing against the
  raw files) bound what any Dataset reaches through the same DataLoader; mainCpuMicrosecondsPerBatch is the main
  process's CPU time per batch, the one stage of the pipeline that does not run in parallel. Without persistent
  workers, each epoch also forks and starts two workers, which the workers' CPU time includes.
- open: opening a dataset of --open-samples samples in a fresh process (import, open, first read).

    npm run build && /usr/bin/python3 bench/python-read.py [--samples 5000 | --real A|B | --tree DIR] [--rounds 5]
        [--parts reads,loader,open]
        [--open-samples 1000000] [--persistent-workers] [--epochs 3] [--loader-sides loader-shardkit,...]
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'formats', 'python'))
from shardkit.shared_batch import SharedBatch  # noqa: E402  (the Datasets below are pickled by name to workers)

CLI = os.path.join(ROOT, 'dist', 'bin', 'shardkit.cjs')
SIDES = ['raw', 'shardkit-position', 'shardkit-key', 'shardkit-position-noverify', 'shardkit-position-pread', 'lmdb']
LOADER_SIDES = ['loader-shardkit', 'loader-raw', 'loader-lmdb', 'loader-floor', 'loader-shardkit-shm',
                'loader-raw-shm', 'loader-floor-shm', 'loader-shardkit-nopreload', 'loader-shardkit-shm-untuned']
LOADER_DELIVERS = {
    'loader-shardkit': "ShardkitDataset: [{'__key__': key, ext: bytes}] x 64 per batch, pickled through the pipe",
    'loader-raw': 'open().read() per sample: [bytes] x 64 per batch, pickled through the pipe',
    'loader-lmdb': 'py-lmdb txn.get, one txn per batch: [bytes] x 64 per batch, pickled through the pipe',
    'loader-floor': 'no read (bytes(size) made in memory): [bytes] x 64 per batch, pickled through the pipe',
    'loader-shardkit-shm': 'ShardkitDataset(shared_memory=True): the same dicts, their bytes through shared memory',
    'loader-raw-shm': 'open().read() per sample, returned as a SharedBatch: the same bytes through shared memory',
    'loader-floor-shm': 'no read, returned as a SharedBatch: the same bytes through shared memory',
    'loader-shardkit-nopreload': 'ShardkitDataset(preload_index=False): as loader-shardkit, each worker decoding '
                                 'the index leaves it reads',
    'loader-shardkit-shm-untuned': 'ShardkitDataset(shared_memory=True, tune_worker_malloc=False): the workers\' '
                                   'heaps as glibc sets them'}
READ_RATIOS = [('position / open().read()', 'shardkit-position', 'raw'),
               ('position / lmdb txn.get', 'shardkit-position', 'lmdb'),
               ('key / lmdb txn.get', 'shardkit-key', 'lmdb'),
               ('position without verify / open().read()', 'shardkit-position-noverify', 'raw'),
               ('position without verify / lmdb txn.get', 'shardkit-position-noverify', 'lmdb'),
               ('position with mmap=False / open().read()', 'shardkit-position-pread', 'raw'),
               ('position with mmap=False / lmdb txn.get', 'shardkit-position-pread', 'lmdb')]
LOADER_RATIOS = [('DataLoader shardkit / raw files', 'loader-shardkit', 'loader-raw'),
                 ('DataLoader shardkit / lmdb', 'loader-shardkit', 'loader-lmdb'),
                 ('DataLoader shardkit / no reading at all', 'loader-shardkit', 'loader-floor'),
                 ('DataLoader shardkit shared_memory / raw files', 'loader-shardkit-shm', 'loader-raw'),
                 ('DataLoader shardkit shared_memory / lmdb', 'loader-shardkit-shm', 'loader-lmdb'),
                 ('DataLoader shardkit shared_memory / raw files, shared memory too', 'loader-shardkit-shm',
                  'loader-raw-shm'),
                 ('DataLoader shardkit shared_memory / no reading, shared memory too', 'loader-shardkit-shm',
                  'loader-floor-shm'),
                 ('DataLoader no reading: shared memory / pipe', 'loader-floor-shm', 'loader-floor'),
                 ('Ceiling of any Dataset (pipe): no reading / raw files', 'loader-floor', 'loader-raw'),
                 ('Ceiling of any Dataset (shared memory): no reading / raw files', 'loader-floor-shm', 'loader-raw'),
                 ('DataLoader shardkit: index preloaded before fork / decoded in each worker', 'loader-shardkit',
                  'loader-shardkit-nopreload'),
                 ('DataLoader shardkit shared_memory: workers keep freed memory / glibc\'s default',
                  'loader-shardkit-shm', 'loader-shardkit-shm-untuned')]


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (the DataLoader's workers, once joined)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def read_files(paths):
    """A sample's bytes: its one file's (most samples), or the list of its files' bytes."""
    if len(paths) == 1:
        with open(paths[0], 'rb') as f:
            return f.read()
    out = []
    for path in paths:
        with open(path, 'rb') as f:
            out.append(f.read())
    return out


class RawFiles:
    """The minimal raw-file map-style Dataset: one open().read() per file of a sample (``shared``: a batch is
    returned as a SharedBatch, whose bytes reach the main process through shared memory)."""

    def __init__(self, paths, shared=False):
        self.paths = paths  # per sample, the list of its files
        self.shared = shared

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return read_files(self.paths[i])

    def __getitems__(self, indices):
        paths = self.paths
        batch = [read_files(paths[i]) for i in indices]
        return SharedBatch(batch) if self.shared else batch


class NoReads:
    """The DataLoader's own cost: each sample is zero bytes of its size, made in memory (no file, no read)."""

    def __init__(self, sizes, shared=False):
        self.sizes = sizes
        self.shared = shared

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, i):
        return bytes(self.sizes[i])

    def __getitems__(self, indices):
        batch = [bytes(self.sizes[i]) for i in indices]
        return SharedBatch(batch) if self.shared else batch


class LmdbSamples:
    """A py-lmdb map-style Dataset: the environment opened in each worker, one read transaction per batch; a file
    per LMDB value, keyed by its path in the tree."""

    def __init__(self, path, files):
        self.path = path
        self.keys = [f[0].encode() if len(f) == 1 else [name.encode() for name in f] for f in files]
        self.env = None

    def __len__(self):
        return len(self.keys)

    def _env(self):
        if self.env is None:
            import lmdb
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        return self.env

    def __getitem__(self, i):
        return self.__getitems__([i])[0]

    def __getitems__(self, indices):
        with self._env().begin() as txn:
            get = txn.get
            keys = self.keys
            return [get(k) if type(k) is bytes else [get(name) for name in k] for k in (keys[i] for i in indices)]

    def __getstate__(self):
        return {**self.__dict__, 'env': None}


def make_tree(root: str, n: int, seed: int):
    rng = random.Random(seed)
    for i in range(n):
        d = os.path.join(root, f'class{i % 100:03d}')
        os.makedirs(d, exist_ok=True)
        size = int(math.exp(rng.uniform(math.log(1024), math.log(100 * 1024))))
        with open(os.path.join(d, f'{i:07d}.jpg'), 'wb') as f:
            f.write(rng.randbytes(size))


def child(side: str, work: str, seed: int):
    """One timed pass over every sample in random order; prints samples/s."""
    import lmdb
    import shardkit
    keys, raw, files = load_samples(work)
    order = list(range(len(keys)))
    random.Random(seed).shuffle(order)
    if side == 'raw':
        paths = [[os.path.join(raw, name) for name in f] for f in files]

        def run():
            for i in order:
                for path in paths[i]:
                    with open(path, 'rb') as f:
                        f.read()
    elif side.startswith('shardkit'):
        ds = shardkit.open_dataset(os.path.join(work, 'ds'), verify=not side.endswith('noverify'),
                                   mmap=not side.endswith('pread'))
        if side.startswith('shardkit-position'):
            def run():
                for i in order:
                    ds[i]
        else:
            def run():
                get = ds.get
                for i in order:
                    get(keys[i])
    else:
        env = lmdb.open(os.path.join(work, 'lmdb'), readonly=True, lock=False)
        bkeys = [[name.encode() for name in f] for f in files]

        def run():
            with env.begin() as txn:
                get = txn.get
                for i in order:
                    for k in bkeys[i]:
                        get(k)
    run()  # warm: page cache, index pages, file handles
    c, t = cpu_seconds(), time.perf_counter()
    run()
    t, c = time.perf_counter() - t, cpu_seconds() - c
    print(json.dumps({'rate': len(order) / t, 'cpuRate': len(order) / c}))


def loader_child(side: str, work: str, seed: int, persistent: bool, epochs: int):
    """One warm epoch, then ``epochs`` timed epochs of a DataLoader with two workers; prints samples/s (wall and
    CPU) and the CPU time per sample of the main process and of the workers."""
    import torch
    from torch.utils.data import DataLoader
    import shardkit.torch as skt
    keys, raw, files = load_samples(work)
    shared = side.endswith('-shm')
    if side.startswith('loader-shardkit'):
        data = skt.ShardkitDataset(os.path.join(work, 'ds'), shared_memory=shared or side.endswith('-shm-untuned'),
                                   preload_index=not side.endswith('-nopreload'),
                                   tune_worker_malloc=not side.endswith('-untuned'))
    elif side.startswith('loader-raw'):
        data = RawFiles([[os.path.join(raw, name) for name in f] for f in files], shared)
    elif side == 'loader-lmdb':
        data = LmdbSamples(os.path.join(work, 'lmdb'), files)
    else:
        data = NoReads([sum(os.path.getsize(os.path.join(raw, name)) for name in f) for f in files], shared)
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2, collate_fn=skt.list_collate,
                        generator=torch.Generator().manual_seed(seed), persistent_workers=persistent)
    n = sum(len(b) for b in loader)  # warm: the page cache (and, with persistent workers, the workers)
    assert n == len(keys)

    def workers():
        return workers_cpu_seconds(loader) if persistent else children_cpu_seconds()

    main, kids, t = own_cpu_seconds(), workers(), time.perf_counter()
    m = sum(len(b) for _ in range(epochs) for b in loader)
    t, main, kids = time.perf_counter() - t, own_cpu_seconds() - main, workers() - kids
    assert m == epochs * len(keys)
    print(json.dumps({'rate': m / t, 'cpuRate': m / (main + kids), 'mainCpuUs': main / m * 1e6,
                      'workersCpuUs': kids / m * 1e6}))


def load_samples(work: str):
    """The samples in key order (= the dataset's positions): their keys, the raw tree, and each one's files."""
    with open(os.path.join(work, 'samples.json')) as f:
        samples = json.load(f)
    return samples['keys'], samples['raw'], samples['files']


def write_samples(work: str, raw: str):
    """samples.json from the packed dataset: each sample's files are its key plus each member's extension."""
    import shardkit
    keys, files = [], []
    with shardkit.open_dataset(os.path.join(work, 'ds')) as ds:
        for key in ds.keys():
            names = [key + '.' + ext for ext in ds.get(key) if ext != '__key__']
            missing = [n for n in names if not os.path.isfile(os.path.join(raw, n))]
            if missing:
                sys.exit(f'{missing[0]} is not a file of {raw}: pack keyed it differently; give another --tree')
            keys.append(key)
            files.append(names)
    with open(os.path.join(work, 'samples.json'), 'w') as f:
        json.dump({'keys': keys, 'raw': raw, 'files': files}, f)
    return keys, files


def own_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def children_cpu_seconds() -> float:
    """CPU time of the waited-for children: the DataLoader's workers of the epochs that ended."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def workers_cpu_seconds(loader) -> float:
    """CPU time of a DataLoader's live (persistent) workers, from /proc/PID/schedstat (nanoseconds on a CPU)."""
    total = 0
    for w in loader._iterator._workers:
        with open(f'/proc/{w.pid}/schedstat') as f:
            total += int(f.read().split()[0])
    return total / 1e9


def open_child(directory: str):
    t = time.perf_counter()
    import shardkit
    t_import = time.perf_counter()
    ds = shardkit.open_dataset(directory)
    t_open = time.perf_counter()
    ds[len(ds) // 2]
    t_first = time.perf_counter()
    print(json.dumps({'importMs': (t_import - t) * 1e3, 'openMs': (t_open - t_import) * 1e3,
                      'firstReadMs': (t_first - t_open) * 1e3}))


def run_child(args):
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, check=True, text=True)
    return json.loads(out.stdout)


def measure(sides, ratios, flag, work, a):
    """Rounds of one child per side, alternating the side order; medians and per-round ratio ranges."""
    rounds = []
    for r in range(a.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        extra = (['--persistent-workers'] if a.persistent_workers else []) + ['--epochs', str(a.epochs)]
        rounds.append({s: run_child([flag, s, '--work', work, '--seed', str(a.seed + r), *extra]) for s in order})
    out = {}
    for what, name in (('mainCpuUs', 'mainCpuMicrosecondsPerSample'),
                       ('workersCpuUs', 'workersCpuMicrosecondsPerSample')):
        if what in rounds[0][sides[0]]:
            out[name] = {s: round(statistics.median(r[s][what] for r in rounds), 2) for s in sides}
    if 'mainCpuUs' in rounds[0][sides[0]]:
        out['mainCpuMicrosecondsPerBatch'] = {s: round(v * 64) for s, v in out['mainCpuMicrosecondsPerSample'].items()}
    for what in ('rate', 'cpuRate'):
        out['samplesPerSecond' if what == 'rate' else 'samplesPerCpuSecond'] = {
            s: round(statistics.median(r[s][what] for r in rounds)) for s in sides}
        rs = {name: sorted(r[x][what] / r[y][what] for r in rounds) for name, x, y in ratios}
        out['ratios' if what == 'rate' else 'cpuRatios'] = {
            name: f'{statistics.median(v):.2f} ({v[0]:.2f}-{v[-1]:.2f})' for name, v in rs.items()}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--samples', type=int, default=5000, help='generated files (without --real or --tree)')
    p.add_argument('--real', choices=['A', 'B'], help='a real tree of bench/real-trees.mjs instead of generated files')
    p.add_argument('--tree', help='a directory of files to read instead of generated files')
    p.add_argument('--rounds', type=int, default=5)
    p.add_argument('--open-samples', type=int, default=1_000_000, help='samples of the dataset opened (0: skip)')
    p.add_argument('--parts', default='reads,loader,open')
    p.add_argument('--persistent-workers', action='store_true',
                   help='DataLoader(persistent_workers=True): workers keep their files and decoded index pages')
    p.add_argument('--epochs', type=int, default=3, help='timed DataLoader epochs per round (after a warm one)')
    p.add_argument('--loader-sides', default=','.join(LOADER_SIDES), help='the loader part\'s sides')
    p.add_argument('--child')
    p.add_argument('--loader-child')
    p.add_argument('--open-child')
    p.add_argument('--work')
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()
    if a.child:
        return child(a.child, a.work, a.seed)
    if a.loader_child:
        return loader_child(a.loader_child, a.work, a.seed, a.persistent_workers, a.epochs)
    if a.open_child:
        return open_child(a.open_child)
    import lmdb
    work = tempfile.mkdtemp(prefix='shardkit-bench-python-')
    try:
        tree = None
        if a.real:
            out = subprocess.run(['node', os.path.join(HERE, 'real-trees.mjs'), a.real], check=True,
                                 capture_output=True, text=True)
            tree = json.loads(out.stdout)
            raw = tree['dir']
        elif a.tree:
            raw = os.path.abspath(a.tree)
        else:
            raw = os.path.join(work, 'raw')
            make_tree(raw, a.samples, a.seed)
        # a real tree: one sample per file (names like 1.5.0.2.txt would otherwise share the key "1")
        rule = ['--key-rule', 'path'] if a.real or a.tree else []
        subprocess.run(['node', CLI, 'pack', raw, '--out', os.path.join(work, 'ds'), '--quiet', *rule], check=True)
        keys, files = write_samples(work, raw)
        env = lmdb.open(os.path.join(work, 'lmdb'), map_size=4 << 30)
        with env.begin(write=True) as txn:
            for names in files:
                for name in names:
                    with open(os.path.join(raw, name), 'rb') as f:
                        txn.put(name.encode(), f.read())
        env.close()
        parts = a.parts.split(',')
        result = {'samples': len(keys), 'files': sum(map(len, files)), 'rounds': a.rounds,
                  'tree': ({k: tree[k] for k in ('name', 'fingerprint', 'byExt')} if tree else raw if a.tree
                           else 'generated: log-uniform 1-100 KiB of random bytes'),
                  'bytes': sum(os.path.getsize(os.path.join(raw, name)) for names in files for name in names)}
        if 'reads' in parts:
            result['reads'] = measure(SIDES, READ_RATIOS, '--child', work, a)
        if 'loader' in parts:
            sides = a.loader_sides.split(',')
            result['loader'] = {'persistentWorkers': a.persistent_workers, 'epochs': a.epochs,
                                'delivers': LOADER_DELIVERS,
                                **measure(sides, [r for r in LOADER_RATIOS if r[1] in sides and r[2] in sides],
                                          '--loader-child', work, a)}
        from shardkit import checksum
        result['crc32c'] = checksum.BACKEND
        if checksum.crc32c_module is not None:
            result['crc32c'] += ', crc32c module ' + ('hardware' if __import__('crc32c').hardware_based else 'software')
        if 'open' in parts and a.open_samples:
            big = os.path.join(work, 'big')
            script = ("import {DatasetWriter} from '" + os.path.join(ROOT, 'dist/src/pack/dataset-writer.js') + "';"
                      "const w=new DatasetWriter({dir:process.argv[1],layout:'packed'});"
                      f"for(let i=0;i<{a.open_samples};i++)w.add({{key:'train/'+String(i).padStart(8,'0'),members:{{cls:Buffer.from([i&255])}}}});"
                      "await w.finish();")
            subprocess.run(['node', '--input-type=module', '-e', script, big], check=True)
            opens = [run_child(['--open-child', big]) for _ in range(a.rounds)]
            result['open'] = {'samples': a.open_samples, **{k: round(statistics.median(o[k] for o in opens), 2) for k in opens[0]}}
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
