#!/usr/bin/python3
"""Python random reads of a shardkit dataset against open().read() of the raw files and py-lmdb's txn.get, on the
same samples: real small files of 1-100 KiB (log-uniform sizes), random order, warm page cache, checksums verified.

Each side runs in its own child process (one untimed pass to warm the page cache and the index pages, then a timed
pass over every sample in a seeded random order); sides alternate round by round and the figures are medians. The
machine may be shared: read the ratios, not the absolute rates. Also times opening a dataset in a fresh process.

    npm run build && /usr/bin/python3 bench/python-read.py [--samples 5000] [--rounds 5] [--open-samples 1000000]
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'formats', 'python'))
CLI = os.path.join(ROOT, 'dist', 'bin', 'shardkit.cjs')
SIDES = ['raw', 'shardkit-position', 'shardkit-key', 'shardkit-position-noverify', 'lmdb']


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
    raw = os.path.join(work, 'raw')
    with open(os.path.join(work, 'keys.json')) as f:
        keys = json.load(f)  # sample keys in key order (= the dataset's positions)
    order = list(range(len(keys)))
    random.Random(seed).shuffle(order)
    if side == 'raw':
        paths = [os.path.join(raw, k + '.jpg') for k in keys]

        def run():
            for i in order:
                with open(paths[i], 'rb') as f:
                    f.read()
    elif side.startswith('shardkit'):
        ds = shardkit.open_dataset(os.path.join(work, 'ds'), verify=not side.endswith('noverify'))
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
        bkeys = [k.encode() for k in keys]

        def run():
            with env.begin() as txn:
                get = txn.get
                for i in order:
                    get(bkeys[i])
    run()  # warm: page cache, index pages, file handles
    t = time.perf_counter()
    run()
    print(json.dumps({'rate': len(order) / (time.perf_counter() - t)}))


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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--samples', type=int, default=5000)
    p.add_argument('--rounds', type=int, default=5)
    p.add_argument('--open-samples', type=int, default=1_000_000, help='samples of the dataset opened (0: skip)')
    p.add_argument('--child')
    p.add_argument('--open-child')
    p.add_argument('--work')
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()
    if a.child:
        return child(a.child, a.work, a.seed)
    if a.open_child:
        return open_child(a.open_child)
    import lmdb
    work = tempfile.mkdtemp(prefix='shardkit-bench-python-')
    try:
        raw = os.path.join(work, 'raw')
        make_tree(raw, a.samples, a.seed)
        subprocess.run(['node', CLI, 'pack', raw, '--out', os.path.join(work, 'ds'), '--quiet'], check=True)
        sys.path.insert(0, os.path.join(ROOT, 'formats', 'python'))
        import shardkit
        with shardkit.open_dataset(os.path.join(work, 'ds')) as ds:
            keys = list(ds.keys())
        with open(os.path.join(work, 'keys.json'), 'w') as f:
            json.dump(keys, f)
        env = lmdb.open(os.path.join(work, 'lmdb'), map_size=4 << 30)
        with env.begin(write=True) as txn:
            for k in keys:
                with open(os.path.join(raw, k + '.jpg'), 'rb') as f:
                    txn.put(k.encode(), f.read())
        env.close()
        rates = {s: [] for s in SIDES}
        for r in range(a.rounds):
            sides = SIDES if r % 2 == 0 else SIDES[::-1]
            for s in sides:
                rates[s].append(run_child(['--child', s, '--work', work, '--seed', str(a.seed + r)])['rate'])
        med = {s: statistics.median(v) for s, v in rates.items()}
        result = {
            'samples': a.samples, 'rounds': a.rounds, 'bytes': sum(os.path.getsize(os.path.join(raw, k + '.jpg')) for k in keys),
            'samplesPerSecond': {s: round(v) for s, v in med.items()},
            'ratios': {
                'position / open().read()': med['shardkit-position'] / med['raw'],
                'position / lmdb txn.get': med['shardkit-position'] / med['lmdb'],
                'key / lmdb txn.get': med['shardkit-key'] / med['lmdb'],
                'position without verify / open().read()': med['shardkit-position-noverify'] / med['raw'],
                'position without verify / lmdb txn.get': med['shardkit-position-noverify'] / med['lmdb'],
            },
        }
        from shardkit import checksum
        result['crc32c'] = 'crc32c module' + (' (hardware)' if getattr(__import__('crc32c'), 'hardware_based', False) else ' (software)') if checksum.NATIVE else 'pure Python'
        if a.open_samples:
            big = os.path.join(work, 'big')
            tiny = os.path.join(work, 'tiny')
            os.makedirs(tiny)
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
