"""The proxy surface: one toolset holding the group members and the two controls, without an extra tool layer.

A `CombinedToolset` re-wraps every tool it lists (`_CombinedToolsetTool`) so it can route calls back to the
child that listed it. The members and controls already name their owning toolset in `ToolsetTool.toolset`
(`GroupMemberToolset` / `ControlToolset` set it), so this surface merges their tools as they are and routes
by that field; only the part contributed by capability sources, whose tools pass through Pydantic AI's own
composition, is routed through its `CombinedToolset`. At 100,000 members this saves one allocation per member
per step. Lifecycle (`for_run`, `for_run_step`, enter/exit, instructions, visitors) is `CombinedToolset`'s, but
that the servers of `mcpServers` files among the members (`mcp_servers.toolset.MCPServerToolset`) are started at once
before the children are entered one after another: N servers take about the slowest one's start, not the sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import anyio
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import AgentDepsT, RunContext
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, PrefixedToolset, RenamedToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._private import gather
from ..grouping.members import GroupMemberToolset
from ..mcp_servers.toolset import MCPServerToolset
from .toolset import ControlToolset

__all__ = ('ProxySurfaceToolset',)


@dataclass
class ProxySurfaceToolset(CombinedToolset[AgentDepsT]):
    """Members of toolset sources, the controls, and (last, optional) the toolset of the capability sources.

    Raises:
        UserError: from `get_tools`, when two of its tools share a name (e.g. a member's canonical name equals a
            control name), naming both toolsets.
    """

    @property
    def label(self) -> str:
        return 'ToolProxy surface'

    @staticmethod
    def _routes_itself(toolset: AbstractToolset[Any]) -> bool:
        return isinstance(toolset, (GroupMemberToolset, ControlToolset))

    async def __aenter__(self) -> Self:
        servers = [
            t.wrapped
            for t in self.toolsets
            if isinstance(t, GroupMemberToolset) and isinstance(t.wrapped, MCPServerToolset)
        ]
        if len(servers) > 1:  # each catches its own failure (left out with a warning); cancellation propagates
            try:
                await gather(*(server.prestart() for server in servers))
            except BaseException:
                with anyio.CancelScope(shield=True):
                    for server in servers:
                        if server.prestarted:
                            await server.__aenter__()  # consume the start, then undo it
                            await server.__aexit__(None, None, None)
                raise
        try:
            return await super().__aenter__()
        except BaseException:
            with anyio.CancelScope(shield=True):
                for server in servers:
                    if server.prestarted:  # started here, never entered by the children's entry
                        await server.__aenter__()
                        await server.__aexit__(None, None, None)
            raise

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return self.merge(await gather(*(toolset.get_tools(ctx) for toolset in self.toolsets)))

    def merge(self, listed: list[dict[str, ToolsetTool[AgentDepsT]]]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """One dict of the children's tools (`listed`, in `self.toolsets` order), as they are.

        Raises:
            UserError: two tools share a name, naming both toolsets.
        """
        merged: dict[str, ToolsetTool[AgentDepsT]] = {}
        for toolset, tools in zip(self.toolsets, listed):
            if self._routes_itself(toolset) and merged.keys().isdisjoint(tools):
                merged.update(tools)
                continue
            # A name clash (rare): report it the way CombinedToolset does, naming both sides.
            for name, tool in tools.items():
                existing = merged.get(name)
                if existing is not None and existing is not tool:
                    label = tool.toolset.label
                    raise UserError(
                        f'{label[0].upper()}{label[1:]} defines a tool whose name conflicts with existing tool from '
                        f'{existing.toolset.label}: {name!r}. {toolset.tool_name_conflict_hint}'
                    )
                merged[name] = tool
        return merged

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        owner = tool.toolset
        if self._routes_itself(owner) and any(owner is child for child in self.toolsets):
            return await owner.call_tool(name, tool_args, ctx, tool)
        # Tools of capability sources were listed by the last child, Pydantic AI's own composition.
        return await self.toolsets[-1].call_tool(name, tool_args, ctx, tool)


def refuse_rewrapping(foreign: Sequence[Any], controls: AbstractToolset[Any]) -> None:
    """Fail when a renaming toolset re-owns the tools of the proxy whose controls are `controls` (Pydantic AI's `PrefixTools` around this capability
    or around a `CombinedCapability` holding it, `proxy.get_toolset().prefixed(...)` or `.renamed(...)` installed as
    a toolset): those
    copies of its members would be offered to the model and run when called directly, and the controls would not
    see them. `foreign` holds the step's toolsets that own tools other than members (`Directory.foreign_toolsets`,
    a few per step); each is searched through `wrapped` and `toolsets`, a few levels deep.

    Raises:
        UserError: naming the wrapper.
    """
    for owner in foreign:
        # Renaming wrappers are the toolsets that re-own the tools they wrap (`toolset=self`); a wrapper that
        # only adds tools of its own around everything (Pydantic AI's native tool search) leaves ours alone.
        if not isinstance(owner, (PrefixedToolset, RenamedToolset)):
            continue
        stack: list[tuple[Any, int]] = [(owner, 0)]
        while stack:
            toolset, depth = stack.pop()
            if isinstance(toolset, ProxySurfaceToolset) and any(t is controls for t in toolset.toolsets):
                raise UserError(
                    f'{owner.label} wraps a ToolProxyCapability and re-owns its tools, so its grouped tools would be '
                    'offered directly and its controls would not see them. Do not wrap the proxy in PrefixTools or '
                    'another renaming toolset, or install its toolset again: rename the controls with '
                    'ToolProxyConfig(search_name=..., call_name=...) and prefix or rename the group sources themselves.'
                )
            if depth >= 8:
                continue
            inner = getattr(toolset, 'wrapped', None)
            if isinstance(inner, AbstractToolset):
                stack.append((inner, depth + 1))
            children = getattr(toolset, 'toolsets', None)
            if isinstance(children, (list, tuple)):
                stack.extend((child, depth + 1) for child in children if isinstance(child, AbstractToolset))
