"""Locations (location.py): names inside the dataset only, URLs keep their query, messages never show credentials."""
import os

import pytest

import shardkit
from shardkit.location import redact_location, resolve_location


def test_resolve():
    assert resolve_location('/data/ds', 'shard-000000.tar') == '/data/ds/shard-000000.tar'
    assert resolve_location('file:///data/my%20ds', 'index.skidx') == '/data/my ds/index.skidx'
    assert resolve_location('https://cdn.example/ds?token=abc#x', 'a b/é.tar') == 'https://cdn.example/ds/a%20b/%C3%A9.tar?token=abc'
    assert resolve_location('https://cdn.example/ds/', 'm.json') == 'https://cdn.example/ds/m.json'
    for bad in ('', '/etc/passwd', '../x', 'a/../b', 'a//b', './a', 'a\\b', 'a\0b', 'http:x', 'C:x'):
        with pytest.raises(shardkit.ShardkitError) as e:
            resolve_location('/data/ds', bad)
        assert e.value.code == 'SHARDKIT_ERR_UNSAFE_PATH'


def test_redact():
    assert redact_location('https://user:pw@h.example:8443/ds?sig=secret') == 'https://h.example:8443/ds?...'
    assert redact_location('http://h/ds') == 'http://h/ds'
    assert redact_location('/local/path?x') == '/local/path?x'


def test_a_file_url_opens_the_dataset(tmp_dir):
    from conftest import write_dataset
    d = write_dataset(os.path.join(tmp_dir, 'a ds'), [('k', {'bin': b'1'})])
    with shardkit.open_dataset('file://' + d.replace(' ', '%20')) as ds:
        assert ds.get('k') == {'__key__': 'k', 'bin': b'1'}


def test_errors_from_a_presigned_url_carry_no_credentials(nginx):
    with pytest.raises(shardkit.ShardkitError) as e:
        shardkit.open_dataset(f'http://user:password@127.0.0.1:{nginx.port}/missing-ds?sig=secret', retries=0)
    assert e.value.code == 'SHARDKIT_ERR_NOT_A_DATASET'
    assert 'secret' not in str(e.value) and 'password' not in str(e.value)
