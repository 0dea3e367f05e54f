"""The run adapter of a13n-harness runs: the harness's proxy protocol and CodeAct policies on the proxy's tools.

With CodeAct (docs/a13n-harness.md): the harness's CodeAct runner builds its directory of host functions from the current
`ToolManager` and understands one proxy protocol, published in the public module `a13n_harness.tools.tool_search`:

- a tool whose metadata carries `PROXY_MEMBERSHIP_KEY: ToolSearchMembership(group, description, tool)` is a
  grouped member: CodeAct leaves it out of the runner directory;
- a tool whose metadata carries `PROXY_CONTROL_KEY: "call"` is a call envelope: CodeAct resolves
  `{group, tool, arguments}` to the member itself, checks the member's own CodeAct policy and dispatches the
  member through `ToolManager.handle_call`, so the envelope adds no extra tool call (runner + target = 2);
- a tool is CodeAct-callable when its prepared tool carries `owner_local_name` + `codeact_eligible`, or its
  toolset has a `codeact_policy` with `allows(name)` (protocols of `a13n_harness.toolsets.codeact`).

The core reaches this module only through `_interop.interop_for`, in runs whose deps are a harness
`AgentContext`; `HarnessInterop` implements `_interop.RunInterop` (structurally: this module imports nothing of
the core, so no import cycle runs through the harness package).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import a13n_harness.tools.tool_search as tool_search
import a13n_harness.toolsets.codeact as codeact
from pydantic_ai.toolsets.abstract import ToolsetTool

__all__ = ('HarnessInterop', 'HarnessMemberTool')


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


class HarnessInterop:
    """The `_interop.RunInterop` of a13n-harness runs (one instance, shared by every harness run)."""

    @property
    def harness_run(self) -> bool:
        """Always True."""
        return True

    def mark_member(
        self, source: ToolsetTool[Any], member: ToolsetTool[Any], local_name: str, group: str, description: str
    ) -> ToolsetTool[Any]:
        """`member` (the source's tool `source` under its canonical name) marked as a proxy member.

        Adds `PROXY_MEMBERSHIP_KEY` to the member's metadata (the harness's own ToolSearch adds the same key), so
        CodeAct keeps it out of the runner directory and resolves call envelopes to it; its CodeAct eligibility is
        the source tool's own (`resolve_codeact_eligibility` on the local name).
        """
        tool_def = member.tool_def
        metadata = dict(tool_def.metadata or {})
        metadata[tool_search.PROXY_MEMBERSHIP_KEY] = tool_search.ToolSearchMembership(group, description, local_name)
        return HarnessMemberTool(
            toolset=member.toolset,
            tool_def=replace(tool_def, metadata=metadata),
            max_retries=member.max_retries,
            args_validator=member.args_validator,
            args_validator_func=member.args_validator_func,
            source_tool=source,
            owner_local_name=local_name,
            codeact_eligible=codeact.resolve_codeact_eligibility(local_name, source),
        )

    def source_tool(self, member: ToolsetTool[Any]) -> ToolsetTool[Any] | None:
        """The source's own prepared tool behind a `HarnessMemberTool`, else None."""
        return member.source_tool if isinstance(member, HarnessMemberTool) else None

    def mark_controls(self, tools: dict[str, ToolsetTool[Any]], call_name: str) -> dict[str, ToolsetTool[Any]]:
        """The call control marked as a call envelope (`PROXY_CONTROL_KEY: "call"`)."""
        if call_name not in tools:
            return tools
        tool = tools[call_name]
        metadata = {**(tool.tool_def.metadata or {}), tool_search.PROXY_CONTROL_KEY: 'call'}
        return {**tools, call_name: replace(tool, tool_def=replace(tool.tool_def, metadata=metadata))}

    def codeact_eligible(self, canonical: str, member: ToolsetTool[Any]) -> bool:
        """CodeAct's own rule (`is_codeact_tool_eligible`): the member's policy and CodeAct's category rules."""
        return bool(codeact.is_codeact_tool_eligible(canonical, member))
