"""The epoch plan's resume state (formats/SPEC.md "State JSON"): what identifies an epoch's order, which of its
order indices were already yielded, and the checks a state read back must pass. Mirrors
src/read/epoch-state.ts; every refusal is ``SHARDKIT_ERR_BAD_STATE``.

A state is plain JSON (dicts, lists, ints, strings), keys in Node's order, so ``json.dumps`` of a Python state
equals Node's ``JSON.stringify`` of the same state, and either side resumes the other's.
"""
import re
from typing import Any, Dict, List, Sequence, Tuple

from .errors import ShardkitError
from .js_values import MAX_SAFE_INTEGER, as_int, int_in, js_json, show
from .prng import fnv1a64
from .shuffle import SHUFFLE_NAMES

BAD_STATE = 'SHARDKIT_ERR_BAD_STATE'
EPOCH_STATE_VERSION = 1
"""Bumped when a field changes meaning; states from a newer version are refused."""
MAX_SAMPLES = 2 ** 32 - 1
"""The most samples an order holds: one 32-bit position per sample."""
IDENTITY_FIELDS = ('seed', 'epoch', 'shuffle', 'shuffleOptions', 'samples', 'shards', 'shardSizesHash')
_HASH_RE = re.compile(r'^[0-9a-f]{16}$')

Cursor = Tuple[int, List[int]]
"""(consumed, skip): order indices below consumed, and those in skip (sorted, >= consumed), were yielded."""


def bad_state(message: str) -> ShardkitError:
    return ShardkitError(BAD_STATE, message)


def hash_shard_sizes(shard_sizes: Sequence[int]) -> str:
    """FNV-1a 64, as 16 hex digits, of each shard size as a little-endian u64: a resumed order must come from the
    same shard layout."""
    return '%016x' % fnv1a64(b''.join(int(size).to_bytes(8, 'little') for size in shard_sizes))


def order_identity(seed, epoch: int, shuffle: str, shuffle_options: Dict[str, int],
                   shard_sizes: Sequence[int]) -> Dict[str, Any]:
    """Everything that determines an epoch's order, keys in Node's order. Arguments must be valid."""
    return {
        'version': EPOCH_STATE_VERSION,
        'seed': seed,
        'epoch': epoch,
        'shuffle': shuffle,
        'shuffleOptions': dict(shuffle_options),
        'samples': sum(shard_sizes),
        'shards': len(shard_sizes),
        'shardSizesHash': hash_shard_sizes(shard_sizes),
    }


def expect_identity_shape(state: Dict[str, Any], name: str) -> None:
    """BAD_STATE unless the identity fields of ``state`` have the right types (a state read from JSON)."""
    seed = state.get('seed')
    seed_ok = isinstance(seed, str) or int_in(seed, -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) is not None
    options = state.get('shuffleOptions')
    sizes_hash = state.get('shardSizesHash')
    problem = (
        None if seed_ok else f'seed must be a safe integer or a string but is {show(seed)}'
    ) or (
        None if int_in(state.get('epoch'), 0, MAX_SAFE_INTEGER) is not None
        else f"epoch must be a non-negative integer but is {show(state.get('epoch'))}"
    ) or (
        None if state.get('shuffle') in SHUFFLE_NAMES
        else f"shuffle must be one of {', '.join(SHUFFLE_NAMES)} but is {show(state.get('shuffle'))}"
    ) or (
        None if isinstance(options, dict) else f'shuffleOptions must be an object but is {show(options)}'
    ) or (
        None if int_in(state.get('samples'), 0, MAX_SAMPLES) is not None
        else f"samples must be an integer between 0 and {MAX_SAMPLES} but is {show(state.get('samples'))}"
    ) or (
        None if int_in(state.get('shards'), 0, MAX_SAFE_INTEGER) is not None
        else f"shards must be a non-negative integer but is {show(state.get('shards'))}"
    ) or (
        None if isinstance(sizes_hash, str) and _HASH_RE.match(sizes_hash)
        else f'shardSizesHash must be 16 hex digits but is {show(sizes_hash)}'
    )
    if problem is not None:
        raise bad_state(f'{name}.{problem}')


def expect_same_identity(state: Dict[str, Any], identity: Dict[str, Any], name: str) -> None:
    """BAD_STATE unless ``state`` has this identity: a state saved for another dataset or other options would
    resume the wrong order."""
    version = state.get('version')
    if as_int(version) != EPOCH_STATE_VERSION:
        newer = as_int(version) is not None and as_int(version) > EPOCH_STATE_VERSION
        raise bad_state(
            f'{name} has state version {show(version)}, this shardkit reads version {EPOCH_STATE_VERSION}'
            + (': it was saved by a newer shardkit; upgrade to resume it' if newer else ''))
    for field in IDENTITY_FIELDS:
        if js_json(state.get(field)) != js_json(identity[field]):
            raise bad_state(
                f'{name} was saved with {field} {show(state.get(field))} but this loader has '
                f'{show(identity[field])}: resume with the same dataset, seed, epoch and shuffle options')


def expect_cursor(value: Any, samples: int, name: str) -> Cursor:
    """BAD_STATE unless ``value`` is a valid cursor for an order of ``samples`` positions."""
    if not isinstance(value, dict):
        raise bad_state(f'{name} must be an object with consumed and skip')
    consumed = int_in(value.get('consumed'), 0, samples)
    if consumed is None:
        raise bad_state(f"{name}.consumed must be an integer between 0 and {samples} but is {show(value.get('consumed'))}")
    skip = value.get('skip')
    if not isinstance(skip, list):
        raise bad_state(f'{name}.skip must be an array but is {show(skip)}')
    previous = consumed - 1
    out: List[int] = []
    for raw in skip:
        index = as_int(raw)
        if index is None or index <= previous or index >= samples:
            raise bad_state(f'{name}.skip must hold increasing integers between {consumed} and {samples - 1} '
                            f'but holds {show(raw)} after {previous}')
        out.append(index)
        previous = index
    return consumed, out


def expect_rank_state_shape(value: Any, name: str) -> Dict[str, Any]:
    """BAD_STATE unless ``value`` looks like a rank state (identity fields are compared by the caller)."""
    if not isinstance(value, dict) or value.get('kind') != 'rank':
        raise bad_state(f'{name} must be a rank state from plan.state() but is {show(value)}')
    world_size = as_int(value.get('worldSize'))
    if world_size is None or world_size < 1:
        raise bad_state(f"{name}.worldSize must be a positive integer but is {show(value.get('worldSize'))}")
    if int_in(value.get('rank'), 0, world_size - 1) is None:
        raise bad_state(f"{name}.rank must be an integer between 0 and {world_size - 1} but is {show(value.get('rank'))}")
    length = as_int(value.get('length'))
    if length is None or length < 0:
        raise bad_state(f"{name}.length must be a non-negative integer but is {show(value.get('length'))}")
    if int_in(value.get('yielded'), 0, length) is None:
        raise bad_state(f"{name}.yielded must be an integer between 0 and {length} but is {show(value.get('yielded'))}")
    return value


def remaining_in_epoch(state: Dict[str, Any]) -> int:
    """Order indices not yet yielded in the epoch an epoch state describes; 0 means the epoch is complete."""
    return state['samples'] - state['consumed'] - len(state['skip'])
