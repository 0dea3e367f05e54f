"""a13n-harness interop: apply a `ToolProxyPlan` to a harness agent, group plugin contributions, and the run adapter
that publishes the harness's proxy protocol in harness runs (docs/a13n-harness.md).

Public names (docs/a13n-harness.md): `build`, `ToolProxyPluginAdapter`, and `apply_plan` (what
`ToolProxyPlan.apply` runs). Modules:

- `plan_apply`: `apply_plan`, `build` (a plan applied to an `AgentDefinition`, then `HarnessBuilder.build`);
- `plugin`: `ToolProxyPluginAdapter` (one plugin's contributions as members of a plan group);
- `codeact`: `HarnessInterop`, the `_interop.RunInterop` of harness runs (proxy membership and call-envelope
  markers, CodeAct eligibility); the core loads it through `_interop.interop_for` in harness runs only.

Importing this package imports a13n-harness (ImportError without it). The public names are loaded from their
modules on first access (PEP 562), so a harness run that only needs `codeact` loads neither the plan application
nor the capability layer through this package: no import cycle runs through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import a13n_harness  # noqa: F401  (documented: importing this package imports a13n-harness)

if TYPE_CHECKING:
    from .plan_apply import apply_plan, build
    from .plugin import ToolProxyPluginAdapter

__all__ = ('ToolProxyPluginAdapter', 'apply_plan', 'build')


def __getattr__(name: str) -> Any:
    """`ToolProxyPluginAdapter` from `plugin`; `apply_plan` and `build` from `plan_apply`."""
    if name == 'ToolProxyPluginAdapter':
        from .plugin import ToolProxyPluginAdapter

        return ToolProxyPluginAdapter
    if name in ('apply_plan', 'build'):
        from . import plan_apply

        return getattr(plan_apply, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__() -> list[str]:
    """The module's names, the lazily loaded public ones included."""
    return sorted({*globals(), *__all__})
