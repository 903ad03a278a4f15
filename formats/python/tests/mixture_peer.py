"""The Python side of test/compat/python-mixture-plan.test.ts: one JSON request per stdin line, one JSON reply line.

Requests: {"op": "counts", "sources", "epochSamples"?} -> {"counts"};
{"op": "plans", "sizes", "counts"?, "ratio"?, "options", "ranks"} -> {"ranks": [{"length", "batches"}]}, each batch a
list of [source, position]. Failures: {"error": code, "message"}.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peer_loop import serve  # noqa: E402  (this directory is on sys.path: the script's own)
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


if __name__ == '__main__':
    serve(answer)
