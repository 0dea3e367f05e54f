"""`ToolProxyGroup`: one domain of grouped tools, its members registered under canonical names `{group}__{tool}`
(docs/usage.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset

__all__ = ('ToolProxyGroup',)


@dataclass(frozen=True)
class ToolProxyGroup(Generic[AgentDepsT]):
    """A passive configuration value: which source forms a group, and how the group is described.

    It is not a capability and is never installed on its own; pass it in
    `ToolProxyCapability(groups={name: ToolProxyGroup(...)})`.

    Attributes:
        source: Any `AbstractToolset` (`FunctionToolset`, `CombinedToolset`, `MCPToolset`, ...) or any
            `AbstractCapability` (`Capability(toolsets=[...])`, `CombinedCapability`,
            `pydantic_ai.capabilities.MCP(..., native=False, local=True)`, third-party capabilities).
            A capability is wrapped, never asked for its toolset at definition time, so one whose
            `for_run` returns a replacement keeps its run binding. To combine several sources in one
            group, pass a native `CombinedToolset`, `Capability(toolsets=[...])` or `CombinedCapability`.
        description: What the group is for, shown to the model in the control descriptions. Non-blank,
            at most 512 characters (checked by `ToolProxyCapability`, which knows the group's name).

    Raises:
        TypeError: when `source` is neither a toolset nor a capability, or `description` is not a str.
    """

    source: AbstractToolset[AgentDepsT] | AbstractCapability[AgentDepsT]
    description: str

    def __post_init__(self) -> None:
        if not isinstance(self.source, (AbstractToolset, AbstractCapability)):
            raise TypeError(
                'ToolProxyGroup.source must be an AbstractToolset or an AbstractCapability, '
                f'got {type(self.source).__name__}: {self.source!r}'
            )
        if not isinstance(self.description, str):
            raise TypeError(f'ToolProxyGroup.description must be a str, got {self.description!r}')

    def __hash__(self) -> int:
        return hash((id(self.source), self.description))

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, ToolProxyGroup) and other.source is self.source and other.description == self.description
        )
