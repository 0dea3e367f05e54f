"""`ToolProxyPlan` and `ToolProxySelection`: a host's build-time grouping of existing sources (docs/a13n-harness.md).

A plan names which capabilities of an a13n-harness `AgentDefinition`, and which of its plugins' contributions,
form each group. It never constructs, activates or installs a source: it only changes where the definition's
own sources are presented. This module has no a13n-harness import; `ToolProxyPlan.apply` loads
`pydantic_ai_toolproxy.harness.plan_apply` when called (that module reads plans by their shape and never imports
this one, so the dependency runs one way).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability

from . import _core
from ._messages import source_label
from .config import ToolProxyConfig

if TYPE_CHECKING:
    from a13n_harness import AgentDefinition

__all__ = ('ToolProxyPlan', 'ToolProxySelection')


@dataclass(frozen=True)
class ToolProxySelection:
    """One group of a `ToolProxyPlan`: existing capabilities and plugin IDs whose tools form the group.

    Attributes:
        description: What the group is for, shown to the model (non-blank, at most 512 characters; checked
            by `ToolProxyPlan`, which knows the group's name).
        capabilities: Capability instances that are already in the definition's `capabilities`, selected by
            identity. Each keeps its own binding (`for_agent`/`for_run`, e.g. `ContextualMCP`'s per-run
            replacement), hooks and capability-level instructions.
        plugins: Exact `plugin_id`s of plugins passed in the definition's `plugins`; every capability such a
            plugin contributes from `get_capabilities()` joins the group. Several instances of one plugin class
            are told apart by their distinct IDs.

    Raises:
        TypeError: `description` is not a str, a capability is not an `AbstractCapability`, or a plugin ID is
            not a non-blank str.
        ValueError: the selection selects nothing, lists one capability or plugin ID twice, or selects a
            capability with `defer_loading=True`.
    """

    description: str
    capabilities: tuple[AbstractCapability[Any], ...] = ()
    plugins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.description, str):
            raise TypeError(f'ToolProxySelection.description must be a str, got {self.description!r}')
        capabilities = tuple(self.capabilities)
        plugins = tuple(self.plugins)
        object.__setattr__(self, 'capabilities', capabilities)
        object.__setattr__(self, 'plugins', plugins)
        for source in capabilities:
            if not isinstance(source, AbstractCapability):
                raise TypeError(
                    'ToolProxySelection.capabilities must hold capability instances already in the definition, '
                    f'got {type(source).__name__}: {source!r}. Wrap a toolset in a capability (e.g. '
                    'pydantic_ai.capabilities.Toolset) and add it to the definition first.'
                )
            if getattr(source, 'defer_loading', False) is True:
                raise ValueError(
                    f'ToolProxySelection selects {source_label(source)} with defer_loading=True; proxy discovery and '
                    'native deferred loading are distinct interfaces. Remove defer_loading=True to group it, or leave '
                    'it unselected (direct) to keep deferred loading.'
                )
        for plugin_id in plugins:
            if not isinstance(plugin_id, str) or not plugin_id.strip():
                raise TypeError(f'ToolProxySelection.plugins must hold non-blank plugin IDs, got {plugin_id!r}')
        if len({id(s) for s in capabilities}) != len(capabilities):
            raise ValueError('ToolProxySelection.capabilities lists one capability instance twice.')
        if len(set(plugins)) != len(plugins):
            raise ValueError(f'ToolProxySelection.plugins lists a plugin ID twice: {list(plugins)!r}.')
        if not capabilities and not plugins:
            raise ValueError('ToolProxySelection selects no capability and no plugin; give capabilities= or plugins=.')


@dataclass(frozen=True)
class ToolProxyPlan:
    """An immutable, per-agent presentation plan: which existing sources are grouped behind one proxy surface.

    Use it when the host builds a13n-harness agents from definitions and plugins and decides presentation at
    construction time. The installed a13n-harness has no `tool_proxy=` field, so apply a plan with
    `plan.apply(definition)` (an updated `AgentDefinition`) or `pydantic_ai_toolproxy.harness.build(builder,
    spec_or_definition, tool_proxy=plan, ...)`:

    ```python
    from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder
    from pydantic_ai.capabilities import MCP
    from pydantic_ai_toolproxy import ToolProxyPlan, ToolProxySelection

    source = MCP('https://mcp.example.com/mcp', native=False, local=True)
    definition = AgentDefinition(agent=AgentSpec(model='openai:gpt-5'), output_type=str, capabilities=(source,))
    plan = ToolProxyPlan(groups={'knowledge': ToolProxySelection(description='Find project documentation', capabilities=(source,))})
    agent = HarnessBuilder().build(plan.apply(definition))
    ```

    All groups land in one `ToolProxyCapability` surface (one pair of controls). Unlisted sources stay direct.
    The plan is never changed by applying it, and can be applied to several definitions (each gets its own
    surface).

    Attributes:
        groups: Group name -> `ToolProxySelection`, copied into a read-only mapping at construction. Names
            follow the `ToolProxyGroup` rules (`^[A-Za-z][A-Za-z0-9_-]{0,31}$`, no `__`).
        config: The surface's `ToolProxyConfig`: control names, discovery limits and hybrid search settings.

    Raises:
        ValueError: an invalid group name or description; one capability or plugin ID selected by two groups.
        TypeError: `groups` is not a mapping of str to `ToolProxySelection`, or `config` is not a `ToolProxyConfig`.
    """

    groups: Mapping[str, ToolProxySelection]
    config: ToolProxyConfig = field(default_factory=ToolProxyConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.groups, Mapping):
            raise TypeError(
                f'ToolProxyPlan.groups must be a mapping of group name to ToolProxySelection, got {self.groups!r}'
            )
        if not isinstance(self.config, ToolProxyConfig):
            raise TypeError(f'ToolProxyPlan.config must be a ToolProxyConfig, got {self.config!r}')
        groups: dict[str, ToolProxySelection] = {}
        by_source: dict[int, str] = {}
        by_plugin: dict[str, str] = {}
        for name, selection in self.groups.items():
            if not isinstance(name, str):
                raise TypeError(f'ToolProxyPlan group names must be str, got {name!r}')
            _core.validate_group_name(name)
            if not isinstance(selection, ToolProxySelection):
                raise TypeError(
                    f'ToolProxyPlan.groups[{name!r}] must be a ToolProxySelection, got {type(selection).__name__}'
                )
            _core.validate_group_description(name, selection.description)
            for source in selection.capabilities:
                if (other := by_source.get(id(source))) is not None:
                    raise ValueError(
                        f'{source_label(source)} is selected by ToolProxy groups {other!r} and {name!r}; a source belongs '
                        'to one group. Select it in one group only.'
                    )
                by_source[id(source)] = name
            for plugin_id in selection.plugins:
                if (other := by_plugin.get(plugin_id)) is not None:
                    raise ValueError(
                        f"Plugin {plugin_id!r} is selected by ToolProxy groups {other!r} and {name!r}; a plugin's "
                        'contributions belong to one group. Select it in one group only.'
                    )
                by_plugin[plugin_id] = name
            groups[name] = selection
        object.__setattr__(self, 'groups', MappingProxyType(groups))

    def apply(self, definition: AgentDefinition[Any]) -> AgentDefinition[Any]:
        """A copy of `definition` whose selected sources are grouped behind one proxy surface.

        Selected capabilities are wrapped in place (sibling order, IDs, state and hooks are kept), selected
        plugins are wrapped so the harness still calls their `for_agent()`, `get_capabilities()` and
        `wrap_run()` exactly as before, and one `ToolProxyCapability` surface is appended to the capabilities.

        Raises:
            TypeError: `definition` is not an a13n-harness `AgentDefinition`.
            ValueError: a selected capability is not in `definition.capabilities` (or is listed there twice:
                grouped and direct), a selected plugin ID is not among `definition.plugins`, a selected source is
                also grouped by a `ToolProxyCapability` already in the definition, or the definition already has a
                proxy surface (a `ToolProxyCapability`, a `tool_search` plan, or an applied `ToolProxyPlan`).
            ImportError: a13n-harness is not installed.
        """
        from .harness.plan_apply import apply_plan

        return apply_plan(self, definition)
