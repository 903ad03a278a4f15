"""JSON values judged as JavaScript judges them, so Python accepts and refuses exactly what the Node library does.

JavaScript has one number type: ``5`` and ``5.0`` are the same integer, and ``true`` is no number. A state saved by
one language is read by the other through JSON, so these rules decide what a valid state is.
"""
import json
import math
from typing import Any, Optional

MAX_SAFE_INTEGER = 2 ** 53 - 1


def as_int(value: Any) -> Optional[int]:
    """``value`` as an int when JavaScript's ``Number.isInteger`` holds for it, else None (booleans are no numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def int_in(value: Any, low: int, high: int) -> Optional[int]:
    """``value`` as an int when it is an integer in [low, high], else None."""
    number = as_int(value)
    return number if number is not None and low <= number <= high else None


def normalized(value: Any) -> Any:
    """A copy with integral floats as ints, as JSON.stringify would write them."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalized(v) for v in value]
    number = as_int(value)
    return number if number is not None and isinstance(value, float) else value


def js_json(value: Any) -> str:
    """JSON.stringify's text of a JSON value (compact, keys in their order), for equality as Node compares."""
    return json.dumps(normalized(value), separators=(',', ':'), ensure_ascii=False)


def show(value: Any) -> str:
    """A value for an error message: its JSON, cut to 60 characters."""
    try:
        text = js_json(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def received(value: Any) -> str:
    """"<value> of type <type>", for "Expected ... but received ..." messages."""
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
    if len(text) > 80:
        text = text[:77] + '...'
    return f'{text} of type {type(value).__name__}'
