"""shardindex.json, the wids shard index of a tar-layout dataset, as a Python program without shardkit sees it.

Neither wids nor webdataset is packaged by Debian, so this checks the file against the format's published shape
(webdataset's wids: ``__kind__``, ``wids_version``, ``name``, ``shardlist`` of ``{url, nsamples}``, urls relative to
the index file) and reads every sample the way their tar readers group members (key = path up to the first dot of
the basename), with nothing but json and tarfile, in a separate interpreter."""
import json
import os
import subprocess
import sys

from conftest import write_dataset
from datasets import random_samples

READER = r'''
import json, os, sys, tarfile
index_path = sys.argv[1]
spec = json.load(open(index_path))
base = os.path.dirname(index_path)
samples, counts = [], []
for shard in spec["shardlist"]:
    n = 0
    with tarfile.open(os.path.join(base, shard["url"])) as tar:
        for member in tar:
            if not member.isfile():
                continue
            directory, _, name = member.name.rpartition("/")
            stem, _, ext = name.partition(".")
            key = (directory + "/" if directory else "") + stem
            data = tar.extractfile(member).read().hex()
            if samples and samples[-1]["__key__"] == key:
                samples[-1][ext] = data
            else:
                samples.append({"__key__": key, ext: data})
                n += 1
    counts.append(n)
json.dump({"samples": samples, "counts": counts}, sys.stdout)
'''


def test_a_json_and_tarfile_program_reads_every_sample(session_dir):
    samples = random_samples(5, 300)
    d = write_dataset(os.path.join(session_dir, 'wids'), samples, layout='tar', shardBytes=48 * 1024, pageSize=1024)
    index_path = os.path.join(d, 'shardindex.json')
    with open(index_path) as f:
        spec = json.load(f)
    with open(os.path.join(d, 'manifest.json')) as f:
        manifest = json.load(f)
    assert list(spec) == ['__kind__', 'wids_version', 'name', 'shardlist']
    assert spec['__kind__'] == 'wids-shard-index-v1' and spec['wids_version'] == 1
    assert spec['name'] == 'shardkit-' + manifest['index']['crc32c']
    assert 'shardindex.json' in manifest['files']
    assert [list(s) for s in spec['shardlist']] == [['url', 'nsamples']] * len(manifest['shards'])
    assert len(spec['shardlist']) > 5
    out = subprocess.run([sys.executable, '-I', '-c', READER, index_path], capture_output=True, check=True, timeout=120)
    got = json.loads(out.stdout)
    assert got['counts'] == [s['nsamples'] for s in spec['shardlist']]
    assert got['samples'] == [{'__key__': k, **{e: b.hex() for e, b in m.items()}} for k, m in samples]
