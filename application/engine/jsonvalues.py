"""JSON values compared as JSON values: Python's `==` takes `True` for `1` and `False` for `0`,
so a metadata filter on `{"priority": 1}` found entities whose priority is `true`, and a
change from `1` to `true` was no change. Numbers are equal by value (`1` is `1.0`, as JSON has
one number type); `true` and `false` equal only themselves; objects and arrays item by item.
"""

from __future__ import annotations

from typing import Any

__all__ = ["same_json"]


def same_json(a: Any, b: Any) -> bool:
    """Whether `a` and `b` (decoded JSON: dicts, lists, strings, numbers, booleans, None) are
    the same JSON value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(value, b[key]) for key, value in a.items())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(same_json, a, b))
    return type(a) is type(b) and bool(a == b)
