"""Every ```python example in the docstrings of the public API runs (and its assertions hold)."""

from __future__ import annotations

import asyncio
import inspect
import re
import textwrap
from typing import Any

import pytest

import pydantic_ai_toolproxy
from pydantic_ai_toolproxy.grouping import names as _names

BLOCK = re.compile(r'```python\n(.*?)```', re.S)


def public_objects() -> list[tuple[str, Any]]:
    objects: list[tuple[str, Any]] = []
    for name in pydantic_ai_toolproxy.__all__:
        obj = getattr(pydantic_ai_toolproxy, name)
        objects.append((name, obj))
        for attr, member in vars(obj).items() if inspect.isclass(obj) else ():
            if not attr.startswith('_') and (callable(member) or isinstance(member, classmethod)):
                objects.append((f'{name}.{attr}', member))
    objects.append(('_names.canonical_name', _names.canonical_name))
    return objects


EXAMPLES = [
    pytest.param(textwrap.dedent(block), id=f'{name}[{i}]')
    for name, obj in public_objects()
    for i, block in enumerate(BLOCK.findall(inspect.getdoc(obj) or ''))
]


def test_the_public_api_has_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize('source', EXAMPLES)
def test_docstring_example_runs(source: str) -> None:
    if "'openai:" in source:
        pytest.skip('names a real provider model (needs its package and an API key): shown, not run')
    # `Agent.run_sync` runs on the thread's current event loop (creating one if none): give it one to close after.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        exec(compile(source, '<docstring>', 'exec'), {})
    finally:
        asyncio.set_event_loop(None)
        loop.close()
