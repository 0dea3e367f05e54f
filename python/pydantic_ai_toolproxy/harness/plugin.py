"""`ToolProxyPluginAdapter`: one a13n-harness plugin whose capability contributions join a plan group
(docs/a13n-harness.md: plugin-contributed sources).

Importing this module imports a13n-harness.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from a13n_harness import AbstractHarnessPlugin, AgentContext
from a13n_harness.errors import PluginError
from a13n_harness.plugins import PluginOrdering, PluginRunExchange, PluginRunNext
from a13n_harness.result import HarnessRunResult
from pydantic_ai.capabilities import AbstractCapability, CombinedCapability

from .._messages import source_label
from ..capability import ToolProxyCapability
from ..grouping.members import GroupSourceCapability

__all__ = ('ToolProxyPluginAdapter', 'member_source')


def member_source(
    surface: ToolProxyCapability[Any], source: AbstractCapability[Any], group: str
) -> GroupSourceCapability[Any]:
    """`source`, placed where it is, as a member source of `group` on the plan's `surface`.

    The single-child `CombinedCapability` keeps the original capability visible to the harness's tree walks
    (`apply`): its ID, its reserved-type checks and its ordering stay the source's own.
    """
    return surface.group_source(CombinedCapability([source]), group)


class ToolProxyPluginAdapter(AbstractHarnessPlugin):
    """Groups one harness plugin's capability contributions; everything else stays the plugin's own.

    `plugin_id` and `get_ordering()` are the plugin's; `for_agent()`/`for_run()` bind the plugin once and wrap
    the bound instance; `wrap_run()` is the plugin's middleware; `get_capabilities()` calls the plugin's once
    and returns each contribution as a member of `group` on the plan's surface.

    Known limit: the harness's run-bound plugin index (`context.plugins`) holds this adapter, so
    `context.plugins.require(plugin_id, OriginalType)` raises the harness's `PluginError` "Run-bound plugin has
    an unexpected type." (code `plugin_type_mismatch`); read `.wrapped` for the plugin itself.

    Args:
        wrapped: The plugin.
        group: The plan group its contributions join.
        surface: The plan's surface (`ToolProxyCapability._placed`), whose members they become.
        direct: `id()`s of the definition's own capabilities: a contribution among them is refused.

    Raises:
        PluginError: the plugin's binding changed its type, ID or ordering (same rule as the harness's), or it
            contributed something other than an `AbstractCapability`.
        ValueError: a contribution is also one of the definition's own capabilities (grouped and direct).
    """

    def __init__(
        self,
        wrapped: AbstractHarnessPlugin,
        *,
        group: str,
        surface: ToolProxyCapability[Any],
        direct: frozenset[int],
    ) -> None:
        self.wrapped = wrapped
        self.group = group
        self._surface = surface
        self._direct = direct

    @property
    def plugin_id(self) -> str:
        """The plugin's own ID (the harness indexes the adapter under it)."""
        plugin_id: str = self.wrapped.plugin_id
        return plugin_id

    def get_ordering(self) -> PluginOrdering:
        """The plugin's own ordering."""
        return self.wrapped.get_ordering()

    def _rebound(self, replacement: AbstractHarnessPlugin, phase: str) -> ToolProxyPluginAdapter:
        original = self.wrapped
        if (
            not isinstance(replacement, AbstractHarnessPlugin)
            or type(replacement) is not type(original)
            or replacement.plugin_id != original.plugin_id
            or replacement.get_ordering() != original.get_ordering()
        ):
            raise PluginError(
                f'Plugin {phase} binding changed its identity or ordering.',
                code='plugin_binding_identity_changed',
                details={'plugin_id': original.plugin_id, 'phase': phase},
            )
        return ToolProxyPluginAdapter(replacement, group=self.group, surface=self._surface, direct=self._direct)

    def for_agent(self) -> ToolProxyPluginAdapter:
        """The plugin bound to the agent (its `for_agent()`, called once), wrapped again.

        Raises:
            PluginError: the binding changed the plugin's type, ID or ordering (code `plugin_binding_identity_changed`).
        """
        return self._rebound(self.wrapped.for_agent(), 'agent')

    async def for_run(self, context: AgentContext) -> ToolProxyPluginAdapter:
        """The plugin bound to one run (its `for_run(context)`, called once per run), wrapped again.

        Raises:
            PluginError: the binding changed the plugin's type, ID or ordering (code `plugin_binding_identity_changed`).
        """
        return self._rebound(await self.wrapped.for_run(context), 'run')

    def get_capabilities(self) -> Sequence[AbstractCapability[AgentContext]]:
        """The plugin's contributions (its `get_capabilities()`, called once), each as a member source of `group`.

        Raises:
            PluginError: a contribution is not an `AbstractCapability` (code `plugin_capability_invalid`).
            ValueError: a contribution is also one of the definition's own capabilities.
        """
        grouped: list[AbstractCapability[AgentContext]] = []
        for capability in self.wrapped.get_capabilities():
            if not isinstance(capability, AbstractCapability):
                raise PluginError(
                    'Plugin Capability contributions must be AbstractCapability instances.',
                    code='plugin_capability_invalid',
                    details={'plugin_id': self.plugin_id},
                )
            if id(capability) in self._direct:
                raise ValueError(
                    f'Plugin {self.plugin_id!r} contributes {source_label(capability)}, which the definition also installs '
                    f'directly, while ToolProxy group {self.group!r} groups that plugin: a source is either grouped or '
                    "direct. Remove it from the definition's capabilities, or unselect the plugin."
                )
            grouped.append(member_source(self._surface, capability, self.group))
        return tuple(grouped)

    async def wrap_run(self, exchange: PluginRunExchange, call_next: PluginRunNext[Any]) -> HarnessRunResult[Any]:
        """The plugin's own run middleware."""
        return await self.wrapped.wrap_run(exchange, call_next)

    def __repr__(self) -> str:
        return f'ToolProxyPluginAdapter({self.wrapped!r}, group={self.group!r})'
