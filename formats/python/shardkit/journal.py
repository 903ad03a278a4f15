"""What an interrupted or failed pack or derive left (src/pack/journal.ts): the advice a missing manifest gets locally."""
import json
import os
import re
from typing import Optional

WORK_DIR = '.shardkit-work'
JOURNAL_FILE = 'journal.jsonl'

# Codes of input a write can leave out with `--on-error skip` (journal.ts's SKIPPABLE).
_SKIPPABLE = {'SHARDKIT_ERR_INPUT', 'SHARDKIT_ERR_INPUT_CHANGED', 'SHARDKIT_ERR_TOO_LARGE', 'SHARDKIT_ERR_UNSAFE_PATH'}
_SHELL_SAFE = re.compile(r'^[\w./@%+=:,-]+$', re.ASCII)


def shell_word(value: str) -> str:
    """``value`` as one shell word: as it is when that is safe, else in single quotes (missing-manifest.ts)."""
    return value if _SHELL_SAFE.match(value) else "'" + value.replace("'", "'\\''") + "'"


def _plural(n: int, word: str) -> str:
    return f'{n} {word}' + ('' if n == 1 else 's')


def _resume_command(command: str, out: str) -> str:
    return f"`shardkit {command} {'<src>' if command == 'pack' else '<dataset>'} --out {shell_word(out)} --resume`"


def _failure_advice(command: str, failure: dict, out: str) -> str:
    resume = _resume_command(command, out)
    if failure.get('code') in _SKIPPABLE and failure.get('input') is not None:
        return (f"fix or remove {failure['input']} and finish with {resume}, or add `--on-error skip` to leave such "
                f'inputs out; `--force` starts over')
    return f'{resume} fails the same way until the cause is fixed; start over with `--force` (also to change an option)'


def unfinished_write_advice(directory: str, location: Optional[str] = None) -> Optional[str]:
    """How far an interrupted (or failed) write got and what to do, when its journal is in ``directory``; else None.

    ``location`` is the dataset location as the user gave it, which the advised command names (default: directory).
    """
    out = directory if location is None else location
    path = os.path.join(directory, WORK_DIR, JOURNAL_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        parsed = []
        for line in lines:
            if line.strip() == '':
                continue
            try:
                parsed.append(json.loads(line))
            except ValueError:
                break  # a line cut short by a kill: everything before it stands
        if not parsed or not isinstance(parsed[0], dict) or parsed[0].get('type') != 'begin':
            raise ValueError('damaged')
        shards = [line for line in parsed[1:] if isinstance(line, dict) and line.get('type') == 'shard']
        samples = 0
        for line in shards:
            n = line['shard']['samples']
            if isinstance(n, bool) or not isinstance(n, (int, float)):
                raise ValueError('a shard line without its sample count')
            samples += n
        if isinstance(samples, float):
            if not samples.is_integer():
                raise ValueError('a fractional sample count')
            samples = int(samples)
        options = parsed[0].get('options')
        command = 'derive' if isinstance(options, dict) and options.get('source') is not None else 'pack'
        kept = f"{_plural(samples, 'sample')} in {_plural(len(shards), 'finished shard')}"
        last = parsed[-1]
        if isinstance(last, dict) and last.get('type') == 'failed':
            return (f"a {command} failed after {kept} ({last.get('code')}: {last.get('message')}): "
                    f'{_failure_advice(command, last, out)}')
        return (f'an interrupted {command} left {kept}: finish it with {_resume_command(command, out)} '
                f'(same source and options; its {WORK_DIR}/ journal is there)')
    except Exception:
        return f'an interrupted write left a damaged journal in {WORK_DIR}/: start over with `--force`'
