"""The loop of the test peers (plan_peer.py, mixture_peer.py): one JSON request per stdin line, one JSON reply line."""
import json
import sys
import traceback

from shardkit.errors import ShardkitError


def serve(answer):
    """Answers each request with ``answer(request)``; a ShardkitError as {"error": code, "message"}."""
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line))
        except ShardkitError as e:
            reply = {'error': e.code, 'message': e.message}
        except Exception:  # a bug: reported to the test, which fails, instead of a dead peer and a hung test
            reply = {'error': 'PYTHON_EXCEPTION', 'message': traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()
