"""Strict equality of values that reach the model as JSON: tool definitions, their schemas and metadata.

Python's `==` calls `1 == True`, `0.0 == -0.0`, and two dicts holding the same items in another order equal, yet
the JSON the model receives differs. Where a per-step cache decides that a rebuilt value is "unchanged" (a member
reused while its source tool is unchanged: `grouping.members._ListingKey.matches`; a member's indexed text: `grouping.directory._unchanged`),
it compares with `same_value`, so such a change reaches the model.
"""

from __future__ import annotations

from math import copysign

__all__ = ('same_value',)


def same_value(a: object, b: object) -> bool:
    """`a == b`, and of the same type all the way down: dicts (and dict subclasses) with equal keys in the same order,
    lists and tuples (and their subclasses) item by item, floats with the same sign (`-0.0` is not `0.0`), strings,
    ints, bools and None by `==`; any other value only when it is the very same object (an object that `==` calls
    equal may still differ: run state in a tool's metadata must not outlive the run that put it there).

    Raises:
        RecursionError: a circular or very deeply nested value; or whatever a value's own `==` raises (a numpy array's
            `ValueError`, `Decimal('sNaN')`'s `InvalidOperation`). Callers treat any exception as "changed".
    """
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(map(same_value, a, b)) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b and copysign(1.0, a) == copysign(1.0, b)
    if isinstance(a, (str, int)) or a is None:
        return bool(a == b)
    return False
