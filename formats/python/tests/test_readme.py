"""Every python snippet of formats/python/README.md runs, against a Node-written dataset and the same dataset
served by nginx."""
import os
import re
import subprocess
import sys

import pytest

from conftest import write_dataset

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, '..', 'README.md')


def snippets():
    with open(README, encoding='utf-8') as f:
        return re.findall(r'```python\n(.*?)```', f.read(), re.S)


@pytest.fixture(scope='module')
def dataset(nginx):
    samples = [(f'{c}/{i:03d}', {'jpg': bytes([0xFF, 0xD8]) + os.urandom(100 + i), 'cls': str(n).encode()})
               for n, c in enumerate(['cat', 'dog']) for i in range(100)]
    d = write_dataset(os.path.join(nginx.root, 'readme'), samples, pageSize=1024, shardBytes=8 * 1024)
    return d, f'{nginx.url}/readme'


@pytest.mark.parametrize('index', range(len(snippets())))
def test_snippet_runs(index, dataset, tmp_dir):
    local, url = dataset
    code = snippets()[index].replace('/data/train.shards', local).replace('https://data.example.com/train.shards', url)
    path = os.path.join(tmp_dir, f'readme_snippet_{index}.py')  # a script of its own, as a user runs it
    with open(path, 'w', encoding='utf-8') as f:
        f.write(code)
    env = {**os.environ, 'PYTHONPATH': os.path.abspath(os.path.join(HERE, '..')), 'PYTHONDONTWRITEBYTECODE': '1'}
    run = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    if "print(sample['__key__'], sorted(sample))" in code:
        assert "cat/000 ['__key__', 'cls', 'jpg']" in out
    if 'KEY_NOT_FOUND: no sample' in code:
        assert f'SHARDKIT_ERR_KEY_NOT_FOUND: no sample with key "no/such/key" in {local}' in out
    if 'shared_memory=True' in code:  # every sample once, in batches of 64
        assert sorted(int(line.split()[0]) for line in out.splitlines()) == [8, 64, 64, 64]
    if 'multiprocessing' in code:
        assert out.strip() == str([b'\xff\xd8'] * 4)


def test_the_snippets_are_there():
    assert len(snippets()) >= 5
