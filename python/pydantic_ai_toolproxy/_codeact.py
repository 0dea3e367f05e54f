"""Interop with a13n-harness CodeAct, active only in runs whose deps are a harness `AgentContext`.

Spec: "Use with CodeAct". The harness's CodeAct runner builds its directory of host functions from the
current `ToolManager` and understands one proxy protocol, published in the public module
`a13n_harness.tools.tool_search`:

- a tool whose metadata carries `PROXY_MEMBERSHIP_KEY: ToolSearchMembership(group, description, tool)` is a
  grouped member: CodeAct leaves it out of the runner directory;
- a tool whose metadata carries `PROXY_CONTROL_KEY: "call"` is a call envelope: CodeAct resolves
  `{group, tool, arguments}` to the member itself, checks the member's own CodeAct policy and dispatches the
  member through `ToolManager.handle_call`, so the envelope adds no extra tool call (runner + target = 2);
- a tool is CodeAct-callable when its prepared tool carries `owner_local_name` + `codeact_eligible`, or its
  toolset has a `codeact_policy` with `allows(name)` (duck-typed protocols of `a13n_harness.toolsets.codeact`).

Nothing here imports a13n-harness unless the run's deps already are a harness `AgentContext`, so plain
Pydantic AI runs neither pay for the import nor see any of these markers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets.abstract import ToolsetTool

__all__ = (
    'ControlsPolicy',
    'HarnessMemberTool',
    'codeact_eligible',
    'harness_run',
    'mark_controls',
    'member_tool',
    'source_tool',
)


@dataclass(kw_only=True)
class HarnessMemberTool(ToolsetTool[Any]):
    """A member as registered in a harness run: the renamed tool plus its CodeAct identity.

    `source_tool` is the source's own prepared tool (local name), passed back to the source on call so
    wrappers such as `CodeActPolicyToolset` get the tool object they produced. `owner_local_name` and
    `codeact_eligible` make it a harness `CodeActEligibilityCarrier`: eligibility comes from the target's own
    policy, resolved before renaming, never from being grouped.
    """

    source_tool: ToolsetTool[Any]
    owner_local_name: str
    codeact_eligible: bool


class ControlsPolicy:
    """The controls' CodeAct policy: both controls are callable from `run_code` / `run_program`.

    Duck-types `a13n_harness.toolsets.codeact.CodeActToolPolicy` (`allows(name) -> bool`). Calling the
    controls from code grants nothing: the call envelope is resolved by CodeAct to the target, whose own
    policy is checked before dispatch.
    """

    def allows(self, owner_local_name: str) -> bool:
        """Always True: each control may be called from code; the targets keep their own policies."""
        return True


CONTROLS_POLICY = ControlsPolicy()


@dataclass(frozen=True)
class _Harness:
    tool_search: ModuleType
    codeact: ModuleType


_loaded: _Harness | None = None


def harness_run(ctx: RunContext[Any]) -> _Harness | None:
    """The harness's proxy and CodeAct modules when `ctx` belongs to an a13n-harness run, else None."""
    global _loaded
    context = sys.modules.get('a13n_harness.context')
    if context is None or not isinstance(ctx.deps, context.AgentContext):
        return None
    if _loaded is None:
        import a13n_harness.tools.tool_search as tool_search
        import a13n_harness.toolsets.codeact as codeact

        _loaded = _Harness(tool_search=tool_search, codeact=codeact)
    return _loaded


def member_tool(
    harness: _Harness,
    tool: ToolsetTool[Any],
    renamed: ToolsetTool[Any],
    local_name: str,
    group: str,
    description: str,
) -> HarnessMemberTool:
    """`renamed` (the member under its canonical name) marked as a proxy member for the harness.

    Adds `PROXY_MEMBERSHIP_KEY` to the member's metadata (the harness's own ToolSearch adds the same key), so
    CodeAct keeps it out of the runner directory and resolves call envelopes to it.
    """
    tool_search = harness.tool_search
    tool_def = renamed.tool_def
    metadata = dict(tool_def.metadata or {})
    metadata[tool_search.PROXY_MEMBERSHIP_KEY] = tool_search.ToolSearchMembership(group, description, local_name)
    return HarnessMemberTool(
        toolset=renamed.toolset,
        tool_def=replace(tool_def, metadata=metadata),
        max_retries=renamed.max_retries,
        args_validator=renamed.args_validator,
        args_validator_func=renamed.args_validator_func,
        source_tool=tool,
        owner_local_name=local_name,
        codeact_eligible=harness.codeact.resolve_codeact_eligibility(local_name, tool),
    )


def source_tool(tool: ToolsetTool[Any]) -> ToolsetTool[Any] | None:
    """The source's own prepared tool behind a harness member, or None for a plain member."""
    return tool.source_tool if isinstance(tool, HarnessMemberTool) else None


def mark_controls(
    harness: _Harness | None, tools: dict[str, ToolsetTool[Any]], call_name: str
) -> dict[str, ToolsetTool[Any]]:
    """Mark the call control as a call envelope (`PROXY_CONTROL_KEY: "call"`) in a harness run."""
    if harness is None or call_name not in tools:
        return tools
    tool = tools[call_name]
    metadata = {**(tool.tool_def.metadata or {}), harness.tool_search.PROXY_CONTROL_KEY: 'call'}
    return {**tools, call_name: replace(tool, tool_def=replace(tool.tool_def, metadata=metadata))}


def codeact_eligible(ctx: RunContext[Any], name: str, tool: ToolsetTool[Any]) -> bool:
    """Whether code run by CodeAct may call this member: its own policy and CodeAct's category rules.

    Outside a harness run, a member is eligible when its metadata says `codeact_eligible: True`.
    """
    harness = harness_run(ctx)
    if harness is None:
        return (tool.tool_def.metadata or {}).get('codeact_eligible') is True
    return bool(harness.codeact.is_codeact_tool_eligible(name, tool))
