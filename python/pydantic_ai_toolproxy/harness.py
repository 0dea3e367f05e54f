"""Apply a `ToolProxyPlan` to an a13n-harness agent through the harness's public API (spec: "Host integration",
"Plugin-contributed sources").

The installed a13n-harness (0.21) has no `tool_proxy=` field, so this module gives hosts two entry points:

- `ToolProxyPlan.apply(definition)` (implemented here by `apply_plan`): an updated `AgentDefinition`;
- `build(builder, spec_or_definition, tool_proxy=plan, **kwargs)`: the same, then `HarnessBuilder.build`.

How a plan lands in the definition, without patching the harness:

- one `ToolProxyCapability` surface holds the controls and every group's name and description;
- each selected capability is replaced, in place, by a member wrapper bound to that surface, around a
  single-child `CombinedCapability`, so the harness's capability contract still sees (and validates) the
  original capability, its ID and its binding;
- each selected plugin is replaced by a `ToolProxyPluginAdapter` with the same `plugin_id` and ordering; the
  harness calls the adapter's `for_agent()`/`get_capabilities()`/`for_run()`/`wrap_run()` exactly once where it
  would call the plugin's, the adapter forwards each call once, and it wraps the plugin's contributions the same
  way as selected capabilities (so the harness validates them as plugin contributions).

Importing this module imports a13n-harness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a13n_harness import AbstractHarnessPlugin, AgentContext, AgentDefinition, HarnessBuilder
from a13n_harness.errors import PluginError
from a13n_harness.execution import ExecutableAgent
from a13n_harness.plugins import PluginOrdering, PluginRunExchange, PluginRunNext
from a13n_harness.result import HarnessRunResult
from pydantic_ai.agent.spec import AgentSpec
from pydantic_ai.capabilities import AbstractCapability, CombinedCapability

from ._members import GroupSourceCapability
from .capability import ToolProxyCapability
from .group import ToolProxyGroup
from .plan import ToolProxyPlan, source_label

__all__ = ('ToolProxyPluginAdapter', 'apply_plan', 'build')


@dataclass
class _PlacedSource(AbstractCapability[Any]):
    """The surface's stand-in for a plan group whose sources sit elsewhere in the definition (contributes nothing)."""

    group: str = ''


def _member(source: AbstractCapability[Any], group: str, owner: object) -> GroupSourceCapability[Any]:
    # The single-child container keeps the original capability visible to the harness's tree walks
    # (`apply`): its ID, its reserved-type checks and its ordering stay the source's own.
    return GroupSourceCapability(wrapped=CombinedCapability([source]), group=group, owner=owner)


class ToolProxyPluginAdapter(AbstractHarnessPlugin):
    """Groups one harness plugin's capability contributions; everything else stays the plugin's own.

    `plugin_id` and `get_ordering()` are the plugin's; `for_agent()`/`for_run()` bind the plugin once and wrap
    the bound instance; `wrap_run()` is the plugin's middleware; `get_capabilities()` calls the plugin's once
    and returns each contribution as a member of `group` on the plan's surface.

    Known limit: the harness's run-bound plugin index (`context.plugins`) holds this adapter, so
    `context.plugins.require(plugin_id, OriginalType)` raises the harness's `PluginError` "Run-bound plugin has
    an unexpected type." (code `plugin_type_mismatch`); read `.wrapped` for the plugin itself.

    Raises:
        PluginError: the plugin's binding changed its type, ID or ordering (same rule as the harness's), or it
            contributed something other than an `AbstractCapability`.
        ValueError: a contribution is also one of the definition's own capabilities (grouped and direct).
    """

    def __init__(self, wrapped: AbstractHarnessPlugin, *, group: str, owner: object, direct: frozenset[int]) -> None:
        self.wrapped = wrapped
        self.group = group
        self._owner = owner
        self._direct = direct

    @property
    def plugin_id(self) -> str:
        plugin_id: str = self.wrapped.plugin_id
        return plugin_id

    def get_ordering(self) -> PluginOrdering:
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
        return ToolProxyPluginAdapter(replacement, group=self.group, owner=self._owner, direct=self._direct)

    def for_agent(self) -> ToolProxyPluginAdapter:
        return self._rebound(self.wrapped.for_agent(), 'agent')

    async def for_run(self, context: AgentContext) -> ToolProxyPluginAdapter:
        return self._rebound(await self.wrapped.for_run(context), 'run')

    def get_capabilities(self) -> Sequence[AbstractCapability[AgentContext]]:
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
            grouped.append(_member(capability, self.group, self._owner))
        return tuple(grouped)

    async def wrap_run(self, exchange: PluginRunExchange, call_next: PluginRunNext[Any]) -> HarnessRunResult[Any]:
        return await self.wrapped.wrap_run(exchange, call_next)

    def __repr__(self) -> str:
        return f'ToolProxyPluginAdapter({self.wrapped!r}, group={self.group!r})'


def _existing_surfaces(definition: AgentDefinition[Any]) -> list[ToolProxyCapability[Any]]:
    found: list[ToolProxyCapability[Any]] = []
    for capability in definition.capabilities:
        capability.apply(lambda c: found.append(c) if isinstance(c, ToolProxyCapability) else None)
    return found


def _check_one_surface(plan: ToolProxyPlan, definition: AgentDefinition[Any]) -> None:
    selected = {id(s): s for sel in plan.groups.values() for s in sel.capabilities}
    for proxy in _existing_surfaces(definition):
        for name, group in proxy.groups.items():
            source = group.source
            if id(source) in selected:
                raise ValueError(
                    f'{source_label(selected[id(source)])} is grouped both by a ToolProxyCapability already in the '
                    f'definition (group {name!r}) and by the ToolProxyPlan. Install each source through one of them only.'
                )
        raise ValueError(
            'The definition already has a ToolProxyCapability; an agent gets one proxy surface, never competing ones. '
            "Move its groups into the ToolProxyPlan (select their capabilities), or add the plan's groups to it."
        )
    if any(isinstance(p, ToolProxyPluginAdapter) for p in definition.plugins):
        raise ValueError(
            'This definition already has a ToolProxyPlan applied; apply one plan to the original definition.'
        )
    if definition.tool_search is not None:
        raise ValueError(
            'The definition also has an a13n-harness tool_search plan, a second (competing) proxy surface. '
            'Group those sources in the ToolProxyPlan instead, or drop the ToolProxyPlan.'
        )


def apply_plan(plan: ToolProxyPlan, definition: AgentDefinition[Any]) -> AgentDefinition[Any]:
    """`plan` applied to `definition` (see `ToolProxyPlan.apply` for the rules and errors)."""
    if not isinstance(plan, ToolProxyPlan):
        raise TypeError(f'apply_plan() needs a ToolProxyPlan, got {type(plan).__name__}')
    if not isinstance(definition, AgentDefinition):
        raise TypeError(f'ToolProxyPlan.apply() needs an a13n-harness AgentDefinition, got {type(definition).__name__}')
    _check_one_surface(plan, definition)
    counts: dict[int, int] = {}
    for capability in definition.capabilities:
        counts[id(capability)] = counts.get(id(capability), 0) + 1
    plugin_ids = [p.plugin_id for p in definition.plugins]
    group_of: dict[int, str] = {}
    plugin_group: dict[str, str] = {}
    for name, selection in plan.groups.items():
        for source in selection.capabilities:
            seen = counts.get(id(source), 0)
            if seen == 0:
                raise ValueError(
                    f"ToolProxy group {name!r} selects {source_label(source)}, which is not in the definition's "
                    'capabilities. A plan groups sources the definition already installs: add that instance to '
                    'capabilities= (top level), or remove it from the selection.'
                )
            if seen > 1:
                raise ValueError(
                    f'ToolProxy group {name!r} selects {source_label(source)}, which the definition lists {seen} times: '
                    'a source is either grouped or direct. List it once.'
                )
            group_of[id(source)] = name
        for plugin_id in selection.plugins:
            if plugin_id not in plugin_ids:
                raise ValueError(
                    f'ToolProxy group {name!r} selects plugin {plugin_id!r}, which is not available to this build '
                    f'(definition plugins: {plugin_ids!r}). Pass that plugin instance through plugins=; plugins a '
                    'HarnessBuilder creates from its own configuration cannot be selected by a ToolProxyPlan.'
                )
            plugin_group[plugin_id] = name
    surface = ToolProxyCapability(
        groups={
            name: ToolProxyGroup(source=_PlacedSource(group=name), description=selection.description)
            for name, selection in plan.groups.items()
        },
        config=plan.config,
    )
    owner = surface._runtime
    direct = frozenset(counts)
    capabilities = [_member(c, group_of[id(c)], owner) if id(c) in group_of else c for c in definition.capabilities]
    plugins = [
        ToolProxyPluginAdapter(p, group=plugin_group[p.plugin_id], owner=owner, direct=direct)
        if p.plugin_id in plugin_group
        else p
        for p in definition.plugins
    ]
    return definition.with_updates(capabilities=(*capabilities, surface), plugins=tuple(plugins))


def build(
    builder: HarnessBuilder,
    spec_or_definition: AgentSpec | AgentDefinition[Any],
    /,
    *,
    tool_proxy: ToolProxyPlan | None = None,
    pricing_catalog: Any = None,
    **kwargs: Any,
) -> ExecutableAgent[Any]:
    """`builder.build(...)` with a `ToolProxyPlan` applied: the `tool_proxy=` a13n-harness 0.21 lacks.

    ```python
    agent = build(HarnessBuilder(), AgentSpec(), output_type=str, model=model, capabilities=(docs,), tool_proxy=plan)
    ```

    Args:
        builder: The host's `HarnessBuilder`.
        spec_or_definition: An `AgentSpec` (then `kwargs` are `AgentDefinition` fields: `output_type` (required),
            `definition_id`, `model`, `capabilities`, `plugins`, `tool_search`, `subagents`, `model_recovery`)
            or a complete `AgentDefinition` (then no `kwargs`).
        tool_proxy: The plan; None builds unchanged.
        pricing_catalog: Passed to `HarnessBuilder.build` when given.

    Raises:
        TypeError: construction arguments given with an `AgentDefinition`, `output_type` missing with an
            `AgentSpec`, or an unknown argument.
        ValueError: the plan does not fit the definition (see `ToolProxyPlan.apply`).
        a13n_harness.DefinitionError, a13n_harness.PluginError: from the harness build itself.
    """
    if isinstance(spec_or_definition, AgentDefinition):
        if kwargs:
            raise TypeError(f'build() with an AgentDefinition takes no construction arguments, got {sorted(kwargs)}')
        definition = spec_or_definition
    elif isinstance(spec_or_definition, AgentSpec):
        if 'output_type' not in kwargs:
            raise TypeError('build() with an AgentSpec requires the keyword-only output_type argument')
        fields = {k: v for k, v in kwargs.items() if not (k in ('definition_id', 'model_recovery') and v is None)}
        for key in ('capabilities', 'plugins', 'subagents'):
            if key in fields:
                fields[key] = tuple(fields[key])
        definition = AgentDefinition(agent=spec_or_definition, **fields)
    else:
        raise TypeError(f'build() needs an AgentSpec or an AgentDefinition, got {type(spec_or_definition).__name__}')
    if tool_proxy is not None:
        definition = tool_proxy.apply(definition)
    if pricing_catalog is not None:
        return builder.build(definition, pricing_catalog=pricing_catalog)
    return builder.build(definition)
