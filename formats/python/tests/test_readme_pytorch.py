"""The first snippet of formats/python/README.md's "PyTorch" section does what its comments say: every sample once
in epoch 0, and epoch 1, stopped after two steps and resumed from the checkpoint, reads each remaining sample once.
(test_readme.py runs every snippet as a script; this one also counts what it reads.)"""
import os
import re

import pytest

pytest.importorskip('torch')  # Debian's python3-torch; .ci/run installs it, so CI never skips

from conftest import write_dataset  # noqa: E402

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'README.md')
KEYS = [f'k/{i:03d}' for i in range(150)]


def first_pytorch_snippet():
    with open(README, encoding='utf-8') as f:
        section = re.search(r'^## PyTorch\n(.*?)(?=^## |\Z)', f.read(), re.S | re.M)
    assert section, 'formats/python/README.md has no "## PyTorch" section'
    return re.findall(r'```python\n(.*?)```', section.group(1), re.S)[0]


def counted(code, old, new):
    assert old in code, f'the snippet no longer has {old!r}'
    return code.replace(old, new)


def test_the_resume_snippet_reads_each_sample_once_per_epoch(tmp_path):
    location = write_dataset(str(tmp_path / 'train.shards'), [(k, {'bin': k.encode() * 50}) for k in KEYS],
                             shardBytes=4096)
    code = first_pytorch_snippet().replace('/data/train.shards', location)
    code = counted(code, 'checkpoint = json.dumps(',
                   "read.setdefault(epoch, []).extend(s['__key__'] for s in batch); checkpoint = json.dumps(")
    code = counted(code, 'pass  # the rest of epoch 1', "rest.extend(s['__key__'] for s in batch)  # the rest of epoch 1")
    namespace = {'read': {}, 'rest': []}
    exec(compile(code, 'README.md PyTorch', 'exec'), namespace)
    read, rest = namespace['read'], namespace['rest']
    assert sorted(read[0]) == KEYS
    assert len(read[1]) == 2 * 32
    assert sorted(read[1] + rest) == KEYS  # nothing twice, nothing lost
    assert rest, 'the resumed loop read the rest of the epoch'
