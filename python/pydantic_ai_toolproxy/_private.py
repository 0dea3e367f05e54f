"""Every private Pydantic AI name this package uses, in one place, each with why no public one serves.

Private modules may change in any Pydantic AI release, so the dependency is bounded `<3` and
`tests/test_private_imports.py` fails when a module of this package imports a private Pydantic AI name
that is not listed here (or when one listed here disappears).

- `AgentInstructions`, `normalize_instructions` (`pydantic_ai._instructions`): `ToolProxyCapability.
  get_instructions` appends its guidance to whatever the wrapped capabilities return. That value may be a
  string, a function, or a sequence of them; `normalize_instructions` turns each into the one list shape
  Pydantic AI itself uses, and `AgentInstructions` is that return type. No public helper does this.
- `DynamicToolset` (`pydantic_ai.toolsets._dynamic`): `AbstractCapability.get_toolset()` may return a
  toolset *function* (evaluated per run) instead of a toolset. The proxy must wrap it (member registration,
  `ToolProxyCapability.get_toolset`) exactly as Pydantic AI does when it installs a capability, so run-bound
  toolsets keep their per-run behaviour; the class doing that is not exported.
- `gather` (`pydantic_ai._utils`): the proxy's one toolset lists its children concurrently the way
  `CombinedToolset` does: a failure cancels the siblings instead of leaving orphan tasks (unlike
  `asyncio.gather`), and a single child is awaited in the calling task.
"""

from __future__ import annotations

from pydantic_ai._instructions import AgentInstructions, normalize_instructions
from pydantic_ai._utils import gather
from pydantic_ai.toolsets._dynamic import DynamicToolset

__all__ = ('AgentInstructions', 'DynamicToolset', 'gather', 'normalize_instructions')
