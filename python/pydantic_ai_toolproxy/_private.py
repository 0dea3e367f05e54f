"""Every private Pydantic AI name this package uses, in one place, each with why no public one serves.

Private modules may change in any Pydantic AI release, so the dependency is bounded `<3` and
`tests/test_private_imports.py` fails when a module of this package, a test, a benchmark or an example imports a
private Pydantic AI name that is not listed here (or when one listed here disappears): this one file shows what a
release can break.

- `AgentInstructions`, `normalize_instructions` (`pydantic_ai._instructions`): `ToolProxyCapability.
  get_instructions` appends its guidance to whatever the wrapped capabilities return. That value may be a
  string, a function, or a sequence of them; `normalize_instructions` turns each into the one list shape
  Pydantic AI itself uses, and `AgentInstructions` is that return type. No public helper does this.
- `DynamicToolset` (`pydantic_ai.toolsets._dynamic`): `AbstractCapability.get_toolset()` may return a
  toolset *function* (evaluated per run) instead of a toolset. The proxy must wrap it (member registration,
  `ToolProxyCapability.get_toolset`) exactly as Pydantic AI does when it installs a capability, so run-bound
  toolsets keep their per-run behaviour; the class doing that is not exported.
- `keywords_search_fn` (`pydantic_ai.toolsets._tool_search`, Pydantic AI 2.61-2.68): the package itself never
  calls it; the tests and benchmarks compare the proxy's ranking with Pydantic AI's own `'keywords'` strategy.
  Pydantic AI 2.78 made it public as `pydantic_ai.capabilities.keywords_search`, which `keywords_search` here is
  where it exists; this private name is imported only where it does not.
- `gather` (`pydantic_ai._utils`): the proxy's one toolset lists its children concurrently the way
  `CombinedToolset` does: a failure cancels the siblings instead of leaving orphan tasks (unlike
  `asyncio.gather`), and a single child is awaited in the calling task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic_ai.capabilities as _capabilities
from pydantic_ai._instructions import AgentInstructions, normalize_instructions
from pydantic_ai._utils import gather
from pydantic_ai.toolsets._dynamic import DynamicToolset

keywords_search: Callable[..., Any]
"""Pydantic AI's `'keywords'` tool-search strategy, `(ctx, queries, tools) -> list[str]`, on every version."""
if hasattr(_capabilities, 'keywords_search'):  # Pydantic AI 2.78 and newer: public
    keywords_search = getattr(_capabilities, 'keywords_search')  # noqa: B009  (absent from 2.61-2.68's stubs)
else:  # Pydantic AI 2.61-2.68
    from pydantic_ai.toolsets._tool_search import keywords_search_fn as keywords_search

__all__ = ('AgentInstructions', 'DynamicToolset', 'gather', 'keywords_search', 'normalize_instructions')
