"""Strict equality of values that reach the model as JSON: tool definitions, their schemas and metadata.

Python's `==` calls `1 == True`, `0.0 == -0.0`, and two dicts holding the same items in another order equal, yet
the JSON the model receives differs. Where a per-step cache decides that a rebuilt value is "unchanged" (a member
reused while its source tool is unchanged: `_members._ListingKey.matches`; a member's indexed text: `_directory._unchanged`),
it compares with `same_value`, so such a change reaches the model.
"""

from __future__ import annotations

from math import copysign

__all__ = ('same_value',)


def same_value(a: object, b: object) -> bool:
    """`a == b`, and of the same type all the way down: dicts with equal keys in the same order, lists and tuples
    item by item, floats with the same sign (`-0.0` is not `0.0`); anything else by its own `==`.

    Raises:
        RecursionError: a circular or very deeply nested value; or whatever a value's own `==` raises (a numpy array's
            `ValueError`, `Decimal('sNaN')`'s `InvalidOperation`). Callers treat any exception as "changed".
    """
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict) and kind is dict:
        return len(a) == len(b) and all(map(same_value, a, b)) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and (kind is list or kind is tuple):
        return len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, float) and isinstance(b, float) and kind is float:
        return a == b and copysign(1.0, a) == copysign(1.0, b)
    return bool(a == b)
