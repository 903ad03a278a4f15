"""The py-lmdb side of bench/read.mjs: what a Python user has (python3-lmdb, C over a memory map).

Reads the keys listed in ORDER (one UTF-8 key a line, the order bench/read.mjs reads in) from an LMDB environment
with `txn.get` in one read transaction per epoch. The environment is written by this script (`--build`): lmdb-js 3
writes LMDB 1.0's data format, which Debian's liblmdb 0.9 rejects (MDB_INVALID). One record per sample: the key, and
its members' bytes concatenated, as the lmdb-js side stores it. `--buffers` opens the
transaction with `buffers=True`: values are memoryviews into the map (zero copy, valid inside the transaction).
Runs `--warmup` untimed epochs, then `--epochs` timed ones, and prints one JSON line with the median wall and CPU
milliseconds per epoch and the bytes read per epoch (each epoch must read the same bytes).

    /usr/bin/python3 bench/read-pylmdb.py LMDB_DIR ORDER_FILE [--buffers] [--warmup 3] [--epochs 3]
    /usr/bin/python3 bench/read-pylmdb.py LMDB_DIR SAMPLES_JSON --build
"""
import argparse
import json
import os
import statistics
import time

import lmdb


def main():
    p = argparse.ArgumentParser()
    p.add_argument('lmdb_file')
    p.add_argument('order_file')
    p.add_argument('--buffers', action='store_true')
    p.add_argument('--warmup', type=int, default=3)
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--build', action='store_true')
    a = p.parse_args()
    if a.build:
        return build(a.lmdb_file, a.order_file)
    with open(a.order_file, 'rb') as f:
        keys = f.read().split(b'\n')[:-1]
    env = lmdb.open(a.lmdb_file, readonly=True, lock=False)

    def epoch():
        n = 0
        with env.begin(buffers=a.buffers) as txn:
            get = txn.get
            for k in keys:
                n += len(get(k))  # a missing key gives None: len(None) raises, the run fails
        return n

    expected = epoch()
    for _ in range(1, a.warmup):
        if epoch() != expected:
            raise SystemExit('py-lmdb read a different number of bytes in a warm-up epoch')
    ms, cpu = [], []
    for _ in range(a.epochs):
        t0, c0 = time.perf_counter(), time.process_time()
        got = epoch()
        cpu.append((time.process_time() - c0) * 1000)
        ms.append((time.perf_counter() - t0) * 1000)
        if got != expected:
            raise SystemExit(f'py-lmdb read {expected} bytes, then {got}')
    env.close()
    print(json.dumps({'ms': statistics.median(ms), 'cpuMs': statistics.median(cpu), 'bytes': expected}))


def build(env_dir, samples_json):
    """Writes every sample of bench/read.mjs's samples.json (raw files under rawRoot) into a new environment."""
    with open(samples_json, 'rb') as f:
        spec = json.load(f)
    root = spec['rawRoot']
    records = []
    total = 0
    for s in spec['samples']:
        value = b''.join(open(os.path.join(root, name), 'rb').read() for name in s['files'])
        records.append((s['key'].encode('utf-8'), value))
        total += len(value) + 64
    env = lmdb.open(env_dir, map_size=2 * total + (64 << 20))
    with env.begin(write=True) as txn:
        for k, v in records:
            txn.put(k, v)
    env.sync()
    env.close()


if __name__ == '__main__':
    main()
