"""manifest.json, the dataset's commit point (SPEC "Manifest"): parsed with the checks of formats/manifest.ts."""
import json
import re

from .errors import BAD_MANIFEST, UNSUPPORTED_VERSION, ShardkitError

MANIFEST_FILE = 'manifest.json'
MANIFEST_FORMAT = 'shardkit-dataset'
MANIFEST_VERSION = 1
MIN_PAGE_SIZE = 1024
MAX_PAGE_SIZE = 65536
MAX_SAFE_INTEGER = 2 ** 53 - 1

_HEX8 = re.compile(r'[0-9a-f]{8}')
_SAFE_NAME = re.compile(r'(?!\.{1,2}\Z)[^/\\\0]+')
"""Shard and extra file names: plain relative names inside the dataset directory."""


def _is_count(v) -> bool:
    # JSON.parse reads 1.0 as the integer 1: so does the Node reader's check, and so does this one
    if isinstance(v, bool):
        return False
    if isinstance(v, float):
        return v.is_integer() and 0 <= v <= MAX_SAFE_INTEGER
    return isinstance(v, int) and 0 <= v <= MAX_SAFE_INTEGER


def _safe_name(v) -> bool:
    return isinstance(v, str) and _SAFE_NAME.fullmatch(v) is not None


def _hex8(v) -> bool:
    return isinstance(v, str) and _HEX8.fullmatch(v) is not None


def _no_constants(name):
    raise ValueError(f'{name} is not JSON')


def parse_manifest(data, file: str) -> dict:
    """The manifest as a dict, after every check of the Node reader: BAD_MANIFEST (or UNSUPPORTED_VERSION) naming
    the field that fails."""
    text = data.decode('utf-8', errors='replace') if isinstance(data, (bytes, bytearray, memoryview)) else data
    if text.startswith('\ufeff'):  # TextDecoder drops a BOM before JSON.parse sees the text
        text = text[1:]
    try:
        doc = json.loads(text, parse_constant=_no_constants)
    except ValueError:
        raise ShardkitError(BAD_MANIFEST, f'{file}: not valid JSON', file=file) from None
    except RecursionError:  # JSON nested deeper than Python's parser goes
        why = 'nests deeper than this reader parses' if text.lstrip().startswith('{') else 'is not an object'
        raise ShardkitError(BAD_MANIFEST, f'{file}: document {why}', file=file) from None

    def bad(field, why):
        raise ShardkitError(BAD_MANIFEST, f'{file}: {field} {why}', file=file)

    if not isinstance(doc, dict):
        bad('document', 'is not an object')
    if doc.get('format') != MANIFEST_FORMAT:
        bad('format', f'is not "{MANIFEST_FORMAT}"')
    version = doc.get('formatVersion')
    if not _is_count(version) or version < 1:
        bad('formatVersion', 'is not a positive integer')
    if version > MANIFEST_VERSION:
        raise ShardkitError(UNSUPPORTED_VERSION, f'{file}: dataset format version {int(version)} is newer than this '
                            f'shardkit reads ({MANIFEST_VERSION}); upgrade shardkit', file=file)
    if doc.get('layout') not in ('tar', 'packed') or not isinstance(doc.get('layout'), str):
        bad('layout', 'is not "tar" or "packed"')
    if doc.get('compress') not in ('none', 'lz4') or not isinstance(doc.get('compress'), str):
        bad('compress', 'is not "none" or "lz4"')
    tool = doc.get('tool')
    if not isinstance(tool, dict) or tool.get('name') != 'shardkit' or not isinstance(tool.get('version'), str):
        bad('tool', 'is malformed')
    index = doc.get('index')
    if (not isinstance(index, dict) or not _safe_name(index.get('file')) or not _is_count(index.get('bytes'))
            or not _is_count(index.get('pageSize')) or not _hex8(index.get('crc32c'))):
        bad('index', 'is malformed')
    page_size = int(index['pageSize'])
    if page_size & (page_size - 1) or page_size < MIN_PAGE_SIZE or page_size > MAX_PAGE_SIZE:
        bad('index.pageSize', f'is not a power of two between {MIN_PAGE_SIZE} and {MAX_PAGE_SIZE}')
    shards = doc.get('shards')
    if not isinstance(shards, list):
        bad('shards', 'is not an array')
    for i, s in enumerate(shards):
        if (not isinstance(s, dict) or not _safe_name(s.get('file')) or not _is_count(s.get('bytes'))
                or not _is_count(s.get('samples')) or not _hex8(s.get('crc32c'))):
            bad(f'shards[{i}]', 'is malformed')
    totals = doc.get('totals')
    if not isinstance(totals, dict) or not all(_is_count(totals.get(k)) for k in
                                               ('samples', 'members', 'bytes', 'storedBytes', 'shardBytes')):
        bad('totals', 'is malformed')
    if sum(s['samples'] for s in shards) != totals['samples']:
        bad('totals.samples', 'does not equal the sum over shards')
    if sum(s['bytes'] for s in shards) != totals['shardBytes']:
        bad('totals.shardBytes', 'does not equal the sum over shards')
    if len({s['file'] for s in shards}) != len(shards):
        bad('shards', 'names a file twice')
    passes = doc.get('passes')
    if not isinstance(passes, list) or not all(isinstance(p, dict) and isinstance(p.get('name'), str)
                                               and isinstance(p.get('params'), dict) for p in passes):
        bad('passes', 'is malformed')
    files = doc.get('files')
    if not isinstance(files, list) or not all(_safe_name(f) for f in files):
        bad('files', 'is malformed')
    skipped = doc.get('skipped')
    if not isinstance(skipped, list) or not all(isinstance(s, dict) and isinstance(s.get('path'), str)
                                                and isinstance(s.get('reason'), str) for s in skipped):
        bad('skipped', 'is malformed')
    names = [MANIFEST_FILE, index['file'], *(s['file'] for s in shards), *files]
    if len(set(names)) != len(names):
        bad('files', 'name the manifest, the index or a shard, or one file twice')
    if not isinstance(doc.get('extra'), dict):
        bad('extra', 'is not an object')
    part = doc.get('part')
    if 'part' in doc and (not isinstance(part, dict) or not _is_count(part.get('index'))
                          or not _is_count(part.get('count')) or part['index'] >= part['count']):
        bad('part', 'is malformed')
    return doc
