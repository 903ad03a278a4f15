"""What an interrupted pack or derive left (src/pack/journal.ts): the advice a missing manifest gets locally."""
import json
import os
from typing import Optional

WORK_DIR = '.shardkit-work'
JOURNAL_FILE = 'journal.jsonl'


def unfinished_write_advice(directory: str) -> Optional[str]:
    """How far an interrupted write got and how to finish it, when its journal is in ``directory``; else None."""
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
        return (f'an interrupted {command} left {samples} samples in {len(shards)} finished shards: finish it with '
                f'`shardkit {command} --resume` (its {WORK_DIR}/ journal is there)')
    except Exception:
        return f'an interrupted write left a damaged journal in {WORK_DIR}/: start over with `--force`'
