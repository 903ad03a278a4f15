"""The loader's resume state (formats/SPEC.md "State JSON"): an epoch plan's progress wrapped with the identity of
the dataset it was read from, so a state saved on one dataset is refused on another. Mirrors
src/read/loader-state.ts: what Node's ``loader.state()`` returns and ``ds.loader({resumeFrom})`` takes.
"""
import json
from typing import Any, Dict, Sequence

from .epoch_state import bad_state

LOADER_STATE_FORMAT = 'shardkit-loader-state'
LOADER_STATE_VERSION = 1
"""Bumped when a field changes meaning; states from a newer version are refused."""

DatasetIdentity = Dict[str, Any]
"""``{'index': manifest['index']['crc32c'], 'samples': N}``: changes with any re-pack."""


def _describe(value: Any) -> str:
    try:
        text = json.dumps(value, separators=(',', ':'), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def loader_state(dataset: DatasetIdentity, progress: Dict[str, Any]) -> Dict[str, Any]:
    """A loader state, keys in Node's order."""
    return {
        'format': LOADER_STATE_FORMAT,
        'version': LOADER_STATE_VERSION,
        'dataset': {'index': dataset['index'], 'samples': dataset['samples']},
        'progress': progress,
    }


def expect_loader_state(value: Any, identity: DatasetIdentity, name: str = 'resumeFrom') -> Dict[str, Any]:
    """Checks that ``value`` is a loader state for the dataset ``identity`` and returns its progress (a rank or an
    epoch state, checked against the plan by the caller). BAD_STATE otherwise."""
    if not isinstance(value, dict) or value.get('format') != LOADER_STATE_FORMAT:
        raise bad_state(f'Expected a loader state from loader.state() for {name} but received {_describe(value)}')
    if value.get('version') != LOADER_STATE_VERSION or isinstance(value.get('version'), bool):
        raise bad_state(f"{name} has loader state version {value.get('version')}, this shardkit reads version "
                        f'{LOADER_STATE_VERSION}')
    dataset = value.get('dataset')
    if (not isinstance(dataset, dict) or dataset.get('index') != identity['index']
            or dataset.get('samples') != identity['samples'] or isinstance(dataset.get('samples'), bool)):
        saved = (f"index {dataset.get('index')}, {dataset.get('samples')} samples" if isinstance(dataset, dict)
                 else 'no dataset')
        raise bad_state(f"{name} was saved on another dataset ({saved}; this one has index {identity['index']}, "
                        f"{identity['samples']} samples): resume on the dataset the state was saved on")
    progress = value.get('progress')
    if not isinstance(progress, dict):
        raise bad_state(f'{name}.progress must be an object but is {_describe(progress)}')
    return progress


def merge_loader_states(states: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Merges every rank's loader state (any order) into one that resumes the epoch on any number of ranks:
    nothing yielded is repeated, nothing is lost. BAD_STATE when ranks are missing or duplicated, or the states
    come from different datasets or options."""
    from .epoch_plan import merge_rank_states  # epoch_plan imports this module

    if not isinstance(states, (list, tuple)) or len(states) == 0:
        raise bad_state('mergeLoaderStates needs the states of all ranks but received none')
    first = states[0]
    if not isinstance(first, dict) or not isinstance(first.get('dataset'), dict):
        raise bad_state(f'states[0] is not a loader state: {_describe(first)}')
    identity = {'index': first['dataset'].get('index'), 'samples': first['dataset'].get('samples')}
    progress = [expect_loader_state(s, identity, f'states[{i}]') for i, s in enumerate(states)]
    if any(p.get('kind') != 'rank' for p in progress):
        raise bad_state('mergeLoaderStates takes per-rank states; one of them is already merged')
    return loader_state(identity, merge_rank_states(progress))
