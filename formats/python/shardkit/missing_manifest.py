"""Why a location holds no dataset, told apart so the advice can succeed (src/read/missing-manifest.ts): a missing
path, a file (the manifest itself, a tar), an interrupted or failed write, a dataset that lost its manifest (shard
files: reindex), an empty directory, a folder of datasets, or a source folder (pack it first)."""
import os
import re

from .journal import shell_word, unfinished_write_advice
from .location import is_remote, redact_location, resolve_location

MANIFEST_FILE = 'manifest.json'
_INDEX_EXTENSION = '.skidx'
_LOOK_INTO_SUBDIRS = 200
# src/pack/shard-names.ts
_SHARD_FILE_NAME = re.compile(r'^[A-Za-z0-9._-]*[0-9]{6}\.(tar|pack)(\.tmp)?$')


def no_manifest_message(location: str) -> str:
    """The message for a location that has no manifest.json (one line, with what to do next)."""
    shown = redact_location(location)
    if is_remote(location):
        return f"{shown} is not a shardkit dataset (no {MANIFEST_FILE} there): check that the URL is the dataset's directory"
    directory = os.path.dirname(resolve_location(location, MANIFEST_FILE))
    try:
        st = os.stat(directory)
    except OSError:
        return f'{shown}: no such directory'
    import stat as stat_module
    if not stat_module.S_ISDIR(st.st_mode):
        if os.path.basename(directory) == MANIFEST_FILE:
            return f'{shown} is the manifest file: pass the dataset directory that holds it ({os.path.dirname(shown)})'
        if directory.endswith('.tar'):
            return (f'{shown} is a tar file, not a dataset directory: make a dataset of tar shards with '
                    f'`shardkit index {shell_word(shown)} --out DIR`')
        return f'{shown} is a file, not a dataset directory (the directory that holds {MANIFEST_FILE})'
    unfinished = unfinished_write_advice(directory, location)
    if unfinished is not None:
        return f'{shown} is not a shardkit dataset (no {MANIFEST_FILE}; {unfinished})'
    try:
        names = os.listdir(directory)
    except OSError:
        return f'{shown} is not a shardkit dataset (no {MANIFEST_FILE})'
    shards = sum(1 for name in names if _SHARD_FILE_NAME.match(name))
    if shards > 0 or any(name.endswith(_INDEX_EXTENSION) for name in names):
        return (f"{shown} is not a shardkit dataset (no {MANIFEST_FILE}, but {shards} shard file{'' if shards == 1 else 's'}): "
                f'if they are intact tar shards, `shardkit reindex {shell_word(shown)}` rebuilds the index and manifest')
    if not names:
        return f'{shown} is an empty directory, not a dataset'
    datasets = sorted(name for name in names[:_LOOK_INTO_SUBDIRS]
                      if os.path.exists(os.path.join(directory, name, MANIFEST_FILE)))
    if datasets:
        some = ', '.join(os.path.join(shown, name) for name in datasets[:3]) + (', ...' if len(datasets) > 3 else '')
        count = 'one' if len(datasets) == 1 else str(len(datasets))
        return f"{shown} is not a dataset but holds {count}: pass {'it' if len(datasets) == 1 else 'one of them'} ({some})"
    return f'{shown} is a source folder, not a dataset (no {MANIFEST_FILE}): pack it first with `shardkit pack {shell_word(shown)}`'
