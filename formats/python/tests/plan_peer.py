"""The Python side of test/compat/python-epoch-plan.test.ts: answers one JSON request per stdin line with one JSON
line, so a Node property test can compare every plan with Python's (and shrink a counterexample).

Requests: {"op": "plans", "sizes", "options", "ranks", "stateAt": {rank: [k...]}, "datasetIdentity"?} ->
{"ranks": [{"rank", "length", "batches", "padding", "remaining", "states": [...]}]};
{"op": "merge", "states"} -> the merged state; {"op": "order", ...} -> {"order"}. Failures: {"error": code, "message"}.
Run with the tests' directory's parent on sys.path (the package root).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peer_loop import serve  # noqa: E402  (this directory is on sys.path: the script's own)
from shardkit.epoch_plan import EpochPlan, merge_states  # noqa: E402

OPTION_NAMES = {'seed': 'seed', 'epoch': 'epoch', 'shuffle': 'shuffle', 'windowShards': 'window_shards',
                'worldSize': 'world_size', 'partition': 'partition', 'batchSize': 'batch_size',
                'dropLast': 'drop_last', 'resumeFrom': 'resume_from'}


def plan_kwargs(options):
    return {OPTION_NAMES[k]: v for k, v in options.items()}


def answer(request):
    op = request['op']
    if op == 'merge':
        return merge_states(request['states'])
    kwargs = plan_kwargs(request['options'])
    identity = request.get('datasetIdentity')
    if op == 'order':
        return {'order': list(EpochPlan(request['sizes'], **kwargs).order)}
    out = []
    for rank in request['ranks']:
        plan = EpochPlan(request['sizes'], rank=rank, dataset_identity=identity, **kwargs)
        state = plan.state if identity is not None else plan.progress
        out.append({'rank': rank, 'length': plan.length, 'batches': list(plan.batches()), 'padding': plan.padding,
                    'remaining': plan.remaining,
                    'states': [state(k) for k in request.get('stateAt', {}).get(str(rank), [])]})
    return {'ranks': out}


if __name__ == '__main__':
    serve(answer)
