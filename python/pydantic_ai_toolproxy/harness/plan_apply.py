"""Apply a `ToolProxyPlan` to an a13n-harness agent through the harness's public API: the definition's own sources
and its plugins' contributions regrouped, nothing constructed or installed (docs/a13n-harness.md).

The installed a13n-harness (0.21) has no `tool_proxy=` field, so this module gives hosts two entry points:

- `ToolProxyPlan.apply(definition)` (implemented here by `apply_plan`): an updated `AgentDefinition`;
- `build(builder, spec_or_definition, tool_proxy=plan, **kwargs)`: the same, then `HarnessBuilder.build`.

How a plan lands in the definition, without patching the harness:

- one `ToolProxyCapability` surface (`ToolProxyCapability._placed`, built from the plan's group names,
  descriptions and config) holds the controls and every group's name and description, and no source;
- each selected capability is replaced, in place, by a member wrapper bound to that surface, around a
  single-child `CombinedCapability`, so the harness's capability contract still sees (and validates) the
  original capability, its ID and its binding;
- each selected plugin is replaced by a `ToolProxyPluginAdapter` with the same `plugin_id` and ordering; the
  harness calls the adapter's `for_agent()`/`get_capabilities()`/`for_run()`/`wrap_run()` exactly once where it
  would call the plugin's, the adapter forwards each call once, and it wraps the plugin's contributions the same
  way as selected capabilities (so the harness validates them as plugin contributions).

This module reads a plan through `PlanLike` (the shape `ToolProxyPlan` has) and imports nothing of `plan.py`,
which imports this module when `ToolProxyPlan.apply` is called: the dependency runs one way. Importing this
module imports a13n-harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from a13n_harness import AgentDefinition, HarnessBuilder
from a13n_harness.execution import ExecutableAgent
from pydantic_ai.agent.spec import AgentSpec
from pydantic_ai.capabilities import AbstractCapability, CombinedCapability

from .._messages import source_label
from ..capability import ToolProxyCapability
from ..config import ToolProxyConfig
from ..group import ToolProxyGroup
from .plugin import ToolProxyPluginAdapter, member_source

__all__ = ('PlanLike', 'SelectionLike', 'apply_plan', 'build')


class SelectionLike(Protocol):
    """The shape of a `ToolProxySelection` this module reads."""

    @property
    def description(self) -> str:
        """What the group is for (validated by the plan)."""
        ...

    @property
    def capabilities(self) -> tuple[AbstractCapability[Any], ...]:
        """Selected capability instances of the definition, by identity."""
        ...

    @property
    def plugins(self) -> tuple[str, ...]:
        """Selected plugin IDs."""
        ...


@runtime_checkable
class PlanLike(Protocol):
    """The shape of a `ToolProxyPlan` this module reads (`ToolProxyPlan` is the implementation; `apply` is its
    entry point)."""

    @property
    def groups(self) -> Mapping[str, SelectionLike]:
        """Group name -> selection, in order."""
        ...

    @property
    def config(self) -> ToolProxyConfig:
        """Control names and discovery limits of the surface."""
        ...

    def apply(self, definition: AgentDefinition[Any]) -> AgentDefinition[Any]:
        """The plan applied to `definition` (`ToolProxyPlan.apply`)."""
        ...


def _existing_surfaces(definition: AgentDefinition[Any]) -> list[ToolProxyCapability[Any]]:
    found: list[ToolProxyCapability[Any]] = []
    for capability in definition.capabilities:
        capability.apply(lambda c: found.append(c) if isinstance(c, ToolProxyCapability) else None)
    return found


def _check_one_surface(plan: PlanLike, definition: AgentDefinition[Any]) -> None:
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


def apply_plan(plan: PlanLike, definition: AgentDefinition[Any]) -> AgentDefinition[Any]:
    """`plan` (a `ToolProxyPlan`) applied to `definition` (see `ToolProxyPlan.apply` for the rules and errors).

    Raises:
        TypeError: `plan` is not a `ToolProxyPlan` (has not its shape), or `definition` not an `AgentDefinition`.
        ValueError: the plan does not fit the definition (see `ToolProxyPlan.apply`).
    """
    if not isinstance(plan, PlanLike):
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
    surface: ToolProxyCapability[Any] = ToolProxyCapability._placed(
        {
            name: ToolProxyGroup(
                source=CombinedCapability(list(selection.capabilities)), description=selection.description
            )
            for name, selection in plan.groups.items()
        },
        config=plan.config,
    )
    direct = frozenset(counts)
    capabilities = [
        member_source(surface, c, group_of[id(c)]) if id(c) in group_of else c for c in definition.capabilities
    ]
    plugins = [
        ToolProxyPluginAdapter(p, group=plugin_group[p.plugin_id], surface=surface, direct=direct)
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
    tool_proxy: PlanLike | None = None,
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
        tool_proxy: The `ToolProxyPlan`; None builds unchanged.
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
