"""Every damaged or hostile dataset of the Node suite (test/unit/index-damage.test.ts, test/e2e/hostile.test.ts)
gives the same answer in Python as in Node, operation by operation: the same error code and message, or the same
bytes."""
import json
import os
import random
import shutil
import stat

import pytest

import shardkit
from conftest import digest, node, write_dataset

N = 400
OPS = ([['get', f's/{i:04d}'] for i in range(0, N, 7)] + [['get', 's/0150']] + [['at', i] for i in range(0, N, 7)]
       + [['has', 's/0123'], ['has', 's/9999'], ['keys', {'prefix': 's/01'}], ['at', N], ['get', 's/01']])


def body(i: int, seed: int = 0) -> bytes:
    return bytes((i + seed + j) & 0xFF for j in range(20 + i % 13))


def make(directory: str, seed: int = 0, **options) -> str:
    samples = [(f's/{i:04d}', {'bin': body(i, seed), **({'txt': b'x' * (i % 5)} if i % 3 == 0 else {})})
               for i in range(N)]
    return write_dataset(directory, samples, pageSize=1024, shardBytes=16 * 1024, **options)


def python_answer(location: str, options: dict):
    answer = {'open': None, 'results': []}
    try:
        ds = shardkit.open_dataset(location, **options)
    except shardkit.ShardkitError as e:
        answer['open'] = e.code
        answer['openMessage'] = e.message
        return answer
    with ds:
        for op, arg in OPS:
            try:
                if op == 'get':
                    answer['results'].append(digest(ds.get(arg)))
                elif op == 'at':
                    answer['results'].append(digest(ds.at(arg)))
                elif op == 'has':
                    answer['results'].append(arg in ds)
                else:
                    answer['results'].append(list(ds.keys(**arg)))
            except shardkit.ShardkitError as e:
                answer['results'].append({'code': e.code, 'message': e.message})
    return answer


def edit_manifest(d, edit):
    path = os.path.join(d, 'manifest.json')
    with open(path) as f:
        m = json.load(f)
    edit(m)
    with open(path, 'w') as f:
        json.dump(m, f, indent=2)


def edit_file(d, name, edit):
    path = os.path.join(d, name)
    with open(path, 'rb') as f:
        data = bytearray(f.read())
    data = edit(data)
    with open(path, 'wb') as f:
        f.write(data)


def flip(pos, mask):
    def edit(b):
        b[pos] ^= mask
        return b
    return edit


def flip_member(d, key, at, mask):
    """Flips a byte of ``key``'s first member, past the shard's fingerprinted head."""
    with shardkit.open_dataset(d) as ds:
        entry = ds.locate(key)
        shard = ds.manifest['shards'][entry.shard]['file']
    pos = entry.offset + entry.members[0][1] + at
    assert pos >= 4096
    edit_file(d, shard, flip(pos, mask))


def interrupted(lines):
    """No manifest, and a journal of ``lines`` (strings) as a killed pack or derive leaves."""
    def mutate(d):
        os.remove(os.path.join(d, 'manifest.json'))
        os.makedirs(os.path.join(d, '.shardkit-work'))
        with open(os.path.join(d, '.shardkit-work', 'journal.jsonl'), 'w') as f:
            f.write(''.join(line + '\n' for line in lines))
    return mutate


def set_part(value):
    def edit(m):
        m['part'] = value
    return edit


def make_lz4(directory: str) -> str:
    samples = [(f's/{i:04d}', {'bin': (b'ab%d' % (i % 7)) * (50 + i % 30), 'raw': body(i)}) for i in range(N)]
    return write_dataset(directory, samples, pageSize=1024, shardBytes=16 * 1024, compress='lz4')


def flip_lz4(d, key, at, mask):
    """Flips byte ``at`` of ``key``'s LZ4 frame (negative: from its end), past the shard's fingerprinted head."""
    with shardkit.open_dataset(d) as ds:
        entry = ds.locate(key)
        shard = ds.manifest['shards'][entry.shard]['file']
    frame = next(m for m in entry.members if m[4] == 1)
    pos = entry.offset + frame[1] + (at if at >= 0 else frame[3] + at)
    assert pos >= 4096
    edit_file(d, shard, flip(pos, mask))


def damage_cases(base: str, other: str, packed: str, lz4: str):
    """(name, source dir, mutation of a copy) for each hostile case."""
    index_size = os.path.getsize(os.path.join(base, 'index.skidx'))
    rng = random.Random(24)
    cases = [(f'flip index byte {p} ^ {m}', base, lambda d, p=p, m=m: edit_file(d, 'index.skidx', flip(p, m)))
             for p, m in ((rng.randrange(index_size), rng.randint(1, 255)) for _ in range(120))]
    cases += [(f'flip page byte {p}', base, lambda d, p=p: edit_file(d, 'index.skidx', flip(p, 1)))
              for p in (1024 + 40, 2048 + 16, 2048 + 17, 1024 + 12, 1024 + 2, 1024)]
    cases += [
        ('index magic', base, lambda d: edit_file(d, 'index.skidx', lambda b: bytearray(b'\x7f') + b[1:])),
        ('index version 9', base, lambda d: edit_file(d, 'index.skidx', lambda b: b[:8] + bytearray([9]) + b[9:])),
        ('index cut by 100', base, lambda d: edit_file(d, 'index.skidx', lambda b: b[:-100])),
        ('index cut to 50', base, lambda d: edit_file(d, 'index.skidx', lambda b: b[:50])),
        ('index grown', base, lambda d: edit_file(d, 'index.skidx', lambda b: b + b'\0')),
        ('index missing', base, lambda d: os.remove(os.path.join(d, 'index.skidx'))),
        ('index of another dataset', base, lambda d: shutil.copy(os.path.join(other, 'index.skidx'),
                                                                  os.path.join(d, 'index.skidx'))),
        ('manifest missing', base, lambda d: os.remove(os.path.join(d, 'manifest.json'))),
        ('manifest not JSON', base, lambda d: open(os.path.join(d, 'manifest.json'), 'w').write('{"format": ')),
        ('manifest NaN', base, lambda d: edit_file(d, 'manifest.json', lambda b: b.replace(b'"totals": {', b'"x": NaN, "totals": {'))),
        ('manifest BOM', base, lambda d: edit_file(d, 'manifest.json', lambda b: bytearray(b'\xef\xbb\xbf') + b)),
        ('manifest formatVersion 99', base, lambda d: edit_manifest(d, lambda m: m.update(formatVersion=99))),
        ('manifest formatVersion 1.0', base, lambda d: edit_manifest(d, lambda m: m.update(formatVersion=1.0))),
        ('manifest formatVersion true', base, lambda d: edit_manifest(d, lambda m: m.update(formatVersion=True))),
        ('manifest samples + 1', base, lambda d: edit_manifest(d, lambda m: m['shards'][0].update(samples=m['shards'][0]['samples'] + 1))),
        ('manifest shard crc', base, lambda d: edit_manifest(d, lambda m: m['shards'][0].update(crc32c='00000000'))),
        ('manifest shard crc upper', base, lambda d: edit_manifest(d, lambda m: m['shards'][0].update(crc32c=m['shards'][0]['crc32c'].upper()))),
        ('manifest index crc', base, lambda d: edit_manifest(d, lambda m: m['index'].update(crc32c='0badf00d'))),
        ('manifest layout', base, lambda d: edit_manifest(d, lambda m: m.update(layout='packed'))),
        ('manifest shard name ..', base, lambda d: edit_manifest(d, lambda m: m['shards'][0].update(file='..'))),
        ('manifest shard name a/b', base, lambda d: edit_manifest(d, lambda m: m['shards'][0].update(file='a/b'))),
        ('manifest shard name newline', base, lambda d: edit_manifest(d, lambda m: m['shards'][0].update(file='x\n'))),
        ('manifest index name', base, lambda d: edit_manifest(d, lambda m: m['index'].update(file='../index.skidx'))),
        ('manifest two shards one name', base, lambda d: edit_manifest(d, lambda m: m['shards'][1].update(file=m['shards'][0]['file']))),
        ('manifest tool', base, lambda d: edit_manifest(d, lambda m: m.update(tool={'name': 'other', 'version': '1'}))),
        ('manifest extra list', base, lambda d: edit_manifest(d, lambda m: m.update(extra=[]))),
        ('manifest part null', base, lambda d: edit_manifest(d, set_part(None))),
        ('interrupted pack', base, interrupted(['{"type":"begin","options":{}}', '{"type":"shard","shard":{"samples":70}}',
                                                '{"type":"shard","shard":{"samples":5}}', '{"type":"sh'])),
        ('interrupted derive', base, interrupted(['{"type":"begin","options":{"source":"0badf00d"}}'])),
        ('interrupted, damaged journal', base, interrupted(['{"type":"shard"}'])),
        ('interrupted, shard line without samples', base, interrupted(['{"type":"begin","options":{}}', '{"type":"shard","shard":{}}'])),
        ('manifest not an object', base, lambda d: open(os.path.join(d, 'manifest.json'), 'w').write('[]')),
        ('manifest deep', base, lambda d: open(os.path.join(d, 'manifest.json'), 'w').write('[' * 100000 + ']' * 100000)),
        ('shard 0 missing', base, lambda d: os.remove(os.path.join(d, 'shard-000000.tar'))),
        ('shard 0 cut', base, lambda d: edit_file(d, 'shard-000000.tar', lambda b: b[:5000])),
        ('shard 0 grown', base, lambda d: edit_file(d, 'shard-000000.tar', lambda b: b + b'\0' * 512)),
        ('shard 0 head flipped', base, lambda d: edit_file(d, 'shard-000000.tar', flip(100, 1))),
        ('shard 0 member flipped', base, lambda d: flip_member(d, 's/0007', 5, 0x40)),
        ('shard 1 member flipped', base, lambda d: flip_member(d, 's/0147', 0, 2)),
        ('shard 0 a directory', base, lambda d: (os.remove(os.path.join(d, 'shard-000000.tar')),
                                                 os.mkdir(os.path.join(d, 'shard-000000.tar')))),
        ('shard 0 a FIFO', base, lambda d: (os.remove(os.path.join(d, 'shard-000000.tar')),
                                            os.mkfifo(os.path.join(d, 'shard-000000.tar')))),
        ('manifest a FIFO', base, lambda d: (os.remove(os.path.join(d, 'manifest.json')),
                                             os.mkfifo(os.path.join(d, 'manifest.json')))),
        ('packed header version', packed, lambda d: edit_file(d, 'shard-000000.pack', flip(8, 3))),
        ('packed member flipped', packed, lambda d: flip_member(d, 's/0210', 3, 1)),
        ('packed index flipped', packed, lambda d: edit_file(d, 'index.skidx', flip(1024 + 100, 8))),
    ]
    # LZ4 frames: magic, FLG (version, dictionary), BD (block size), block size word, data, end mark, after the frame
    for at, mask in ((0, 1), (4, 0x40), (4, 0x01), (5, 0x70), (7, 0x80), (8, 0x10), (12, 0x04), (-4, 1), (-1, 0x80)):
        cases.append((f'lz4 frame byte {at} ^ {mask}', lz4, lambda d, a=at, m=mask: flip_lz4(d, 's/0150', a, m)))
    for pages in (0, 3000, 512, 1 << 17):
        cases.append((f'manifest pageSize {pages}', base, lambda d, p=pages: edit_manifest(d, lambda m: m['index'].update(pageSize=p))))
    for part in ({'index': 3, 'count': 3}, {'index': -1, 'count': 2}, {'index': 0}, 'a', {'index': 0.5, 'count': 2}):
        cases.append((f'manifest part {part}', base, lambda d, p=part: edit_manifest(d, set_part(p))))
    for files in (['index.skidx'], ['manifest.json'], ['shard-000000.tar'], ['a', 'a'], ['a\\b'], ['.'], [3]):
        cases.append((f'manifest files {files}', base, lambda d, f=files: edit_manifest(d, lambda m: m.update(files=f))))
    return cases


@pytest.fixture(scope='module')
def cases(session_dir):
    base = make(os.path.join(session_dir, 'damage-base'))
    other = make(os.path.join(session_dir, 'damage-other'), seed=1)
    packed = make(os.path.join(session_dir, 'damage-packed'), layout='packed')
    lz4 = make_lz4(os.path.join(session_dir, 'damage-lz4'))
    out = []
    for i, (name, source, mutate) in enumerate(damage_cases(base, other, packed, lz4)):
        d = os.path.join(session_dir, f'damaged-{i}')
        shutil.copytree(source, d)
        mutate(d)
        out.append((name, d))
    return out


@pytest.fixture(scope='module')
def node_answers(cases):
    jobs = [{'location': d, 'ops': OPS} for _, d in cases]
    return node('probe', {'jobs': jobs, 'messages': True})


@pytest.mark.parametrize('mmap', [True, False])
def test_python_answers_as_node_does(cases, node_answers, mmap):
    """Through memory maps (the default) and through os.pread."""
    mismatches = []
    codes = set()
    for (name, d), expected in zip(cases, node_answers):
        got = python_answer(d, {'mmap': mmap})
        if got != expected:
            mismatches.append((name, _diff(expected, got)))
        codes.add(got['open'])
        codes.update(r['code'] for r in got['results'] if isinstance(r, dict) and 'code' in r)
    assert mismatches == []
    # the cases reach every code a reader raises on bad data
    assert {'SHARDKIT_ERR_BAD_MAGIC', 'SHARDKIT_ERR_UNSUPPORTED_VERSION', 'SHARDKIT_ERR_CORRUPT_INDEX',
            'SHARDKIT_ERR_TRUNCATED', 'SHARDKIT_ERR_BAD_MANIFEST', 'SHARDKIT_ERR_INDEX_MISMATCH',
            'SHARDKIT_ERR_SHARD_MISSING', 'SHARDKIT_ERR_SHARD_MISMATCH', 'SHARDKIT_ERR_CHECKSUM',
            'SHARDKIT_ERR_NOT_A_DATASET', 'SHARDKIT_ERR_UNSAFE_PATH', 'SHARDKIT_ERR_OUT_OF_RANGE',
            'SHARDKIT_ERR_KEY_NOT_FOUND', 'SHARDKIT_ERR_CORRUPT_SHARD'} <= codes


def _diff(expected, got):
    if expected['open'] != got['open'] or expected.get('openMessage') != got.get('openMessage'):
        return {'open': (expected['open'], got['open'], expected.get('openMessage'), got.get('openMessage'))}
    return [(i, OPS[i], e, g) for i, (e, g) in enumerate(zip(expected['results'], got['results'])) if e != g][:3]


def test_error_messages_are_one_line_and_name_the_file(cases):
    for name, d in cases:
        try:
            with shardkit.open_dataset(d) as ds:
                for i in range(len(ds)):
                    ds.at(i)
        except shardkit.ShardkitError as e:
            assert '\n' not in str(e), name
            assert str(e).startswith(e.code + ': ')
            assert d in e.message or e.key is not None, (name, e.message)
