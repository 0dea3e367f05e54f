"""The host adapter the core calls per run: how members and controls are marked, and what CodeAct may call.

With CodeAct (docs/a13n-harness.md): Pydantic AI alone has no CodeAct runner and no proxy protocol, so a plain run uses
`PLAIN`, which changes nothing. In a run whose deps are an a13n-harness `AgentContext`, `interop_for` returns the
harness adapter (`harness.codeact.HarnessInterop`), which publishes the harness's proxy protocol on the proxy's
tools. The core (`grouping.members`, `controls.toolset`, `controls.search`) only ever talks to a `RunInterop`; it never imports
a13n-harness, and this module imports the harness adapter only once such a run is seen: a plain run never
imports `a13n_harness` (the check reads `sys.modules`, so it costs a dict lookup when the harness is not loaded).
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets.abstract import ToolsetTool

__all__ = ('CONTROLS_POLICY', 'PLAIN', 'ControlsPolicy', 'PlainInterop', 'RunInterop', 'interop_for')


class RunInterop(Protocol):
    """What the core asks of the run's host about the proxy's tools (one instance serves every run of its kind).

    Implementations: `PlainInterop` (Pydantic AI runs: no markers) and `harness.codeact.HarnessInterop`
    (a13n-harness runs: the harness's proxy membership and call-envelope markers, CodeAct policies).
    """

    @property
    def harness_run(self) -> bool:
        """Whether the run is an a13n-harness run (then members are rebuilt each listing, never cached)."""
        ...

    def mark_member(
        self, source: ToolsetTool[Any], member: ToolsetTool[Any], local_name: str, group: str, description: str
    ) -> ToolsetTool[Any]:
        """`member` (the source's tool `source`, renamed to its canonical name) as this host registers it."""
        ...

    def source_tool(self, member: ToolsetTool[Any]) -> ToolsetTool[Any] | None:
        """The source's own prepared tool behind a member `mark_member` returned, or None when it kept none."""
        ...

    def mark_controls(self, tools: dict[str, ToolsetTool[Any]], call_name: str) -> dict[str, ToolsetTool[Any]]:
        """The controls' listing (`search` and `call` by name) as this host registers it."""
        ...

    def codeact_eligible(self, canonical: str, member: ToolsetTool[Any]) -> bool:
        """Whether code run by CodeAct may call this member, by its own policy (grouping grants none)."""
        ...


class PlainInterop:
    """The `RunInterop` of a plain Pydantic AI run: no markers; a member is CodeAct-eligible only when its own
    metadata says `codeact_eligible: True`."""

    @property
    def harness_run(self) -> bool:
        """Always False."""
        return False

    def mark_member(
        self, source: ToolsetTool[Any], member: ToolsetTool[Any], local_name: str, group: str, description: str
    ) -> ToolsetTool[Any]:
        """`member` unchanged."""
        return member

    def source_tool(self, member: ToolsetTool[Any]) -> ToolsetTool[Any] | None:
        """None: a plain member keeps no separate source tool."""
        return None

    def mark_controls(self, tools: dict[str, ToolsetTool[Any]], call_name: str) -> dict[str, ToolsetTool[Any]]:
        """`tools` unchanged."""
        return tools

    def codeact_eligible(self, canonical: str, member: ToolsetTool[Any]) -> bool:
        """`member.tool_def.metadata['codeact_eligible'] is True`."""
        return (member.tool_def.metadata or {}).get('codeact_eligible') is True


PLAIN = PlainInterop()
"""The adapter of every plain Pydantic AI run."""

_harness: RunInterop | None = None


def interop_for(ctx: RunContext[Any]) -> RunInterop:
    """The adapter for `ctx`'s run: the harness adapter when `ctx.deps` is an a13n-harness `AgentContext`, else
    `PLAIN`. Never imports a13n-harness itself: a run whose deps are an `AgentContext` has imported it already."""
    global _harness
    context = sys.modules.get('a13n_harness.context')
    if context is None or not isinstance(ctx.deps, context.AgentContext):
        return PLAIN
    if _harness is None:
        from .harness.codeact import HarnessInterop

        _harness = HarnessInterop()
    return _harness


class ControlsPolicy:
    """The controls' CodeAct policy: both controls are callable from `run_code` / `run_program`.

    Duck-types `a13n_harness.toolsets.codeact.CodeActToolPolicy` (`allows(name) -> bool`), which CodeAct reads
    from the toolset (`ControlToolset.codeact_policy`), not through a run adapter, so it lives with the core.
    Calling the controls from code grants nothing: CodeAct resolves a call envelope to its target and checks
    the target's own policy before dispatch.
    """

    def allows(self, owner_local_name: str) -> bool:
        """Always True: each control may be called from code; the targets keep their own policies."""
        return True


CONTROLS_POLICY = ControlsPolicy()
"""The one `ControlsPolicy`."""
