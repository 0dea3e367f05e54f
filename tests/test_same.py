"""`same_value`: the strict equality the per-step caches use (a change the model would see as JSON is a change)."""

from __future__ import annotations

import pytest

from pydantic_ai_toolproxy._same import same_value


@pytest.mark.parametrize(
    ('a', 'b'),
    [
        (1, True),
        (0, False),
        (1, 1.0),
        (0.0, -0.0),
        ({'a': 1, 'b': 2}, {'b': 2, 'a': 1}),
        ({'enum': [0, 1]}, {'enum': [False, True]}),
        ([1, 2], (1, 2)),
        ({'x': {'y': [1, {'z': 1}]}}, {'x': {'y': [1, {'z': True}]}}),
        ({'a': 1}, {'a': 1, 'b': 2}),
        ([1], [1, 1]),
    ],
)
def test_values_that_equal_but_differ_as_json_are_not_the_same(a: object, b: object) -> None:
    assert not same_value(a, b)
    assert not same_value(b, a)


@pytest.mark.parametrize(
    'value',
    [None, 'text', 7, 2**80, 1.5, -0.0, float('inf'), [1, 'a', None], {'a': {'b': [1, 2.5]}}, (1, 2)],
)
def test_equal_values_rebuilt_are_the_same(value: object) -> None:
    import copy

    assert same_value(value, copy.deepcopy(value))


def test_a_circular_value_raises_recursion_error_for_the_caller_to_handle() -> None:
    a: list[object] = []
    a.append(a)
    b: list[object] = []
    b.append(b)
    with pytest.raises(RecursionError):
        same_value(a, b)


def test_dict_subclasses_are_held_to_the_same_strictness() -> None:
    """A schema held in a `dict` subclass: `1` vs `True` and key order still count (the model gets the JSON)."""

    class Schema(dict[str, object]):
        pass

    assert not same_value(Schema(enum=[1]), Schema(enum=[True]))
    assert not same_value(Schema(a=1, b=2), Schema(b=2, a=1))
    assert same_value(Schema(a=[1]), Schema(a=[1]))


def test_other_objects_are_the_same_only_when_identical() -> None:
    """Run state in metadata (a deps object whose `==` ignores a connection) must not outlive its run."""
    from dataclasses import dataclass, field

    @dataclass
    class Deps:
        tenant: str
        conn: object = field(default=None, compare=False)

    first, second = Deps('B', object()), Deps('B', object())
    assert first == second
    assert not same_value({'deps': first}, {'deps': second})
    assert same_value({'deps': first}, {'deps': first})
