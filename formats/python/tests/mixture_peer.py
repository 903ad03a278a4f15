"""The Python side of test/compat/python-mixture-plan.test.ts: one JSON request per stdin line, one JSON reply line.

Requests: {"op": "counts", "sources", "epochSamples"?} -> {"counts"};
{"op": "plans", "sizes", "counts"?, "ratio"?, "options", "ranks"} -> {"ranks": [{"length", "batches"}]}, each batch a
list of [source, position]. Failures: {"error": code, "message"}.
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from shardkit.errors import ShardkitError  # noqa: E402
from shardkit.mixture_plan import MixturePlan, mixture_counts  # noqa: E402

OPTION_NAMES = {'seed': 'seed', 'epoch': 'epoch', 'worldSize': 'world_size', 'partition': 'partition',
                'batchSize': 'batch_size', 'dropLast': 'drop_last', 'resumeFrom': 'resume_from'}


def answer(request):
    if request['op'] == 'counts':
        return {'counts': mixture_counts(request['sources'], request.get('epochSamples'))}
    kwargs = {OPTION_NAMES[k]: v for k, v in request['options'].items()}
    out = []
    for rank in request['ranks']:
        plan = MixturePlan(request['sizes'], request.get('counts'), rank=rank, rehearsal_ratio=request.get('ratio'),
                           **kwargs)
        out.append({'length': len(plan), 'batches': [[list(pair) for pair in b] for b in plan.batches()]})
    return {'ranks': out}


def main():
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line))
        except ShardkitError as e:
            reply = {'error': e.code, 'message': e.message}
        except Exception:  # a bug: reported to the test, which fails, instead of a dead peer and a hung test
            reply = {'error': 'PYTHON_EXCEPTION', 'message': traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()


if __name__ == '__main__':
    main()
