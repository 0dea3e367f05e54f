"""`ToolProxyPlan` / `ToolProxySelection` applied to real a13n-harness definitions and plugins."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from a13n_harness import (
    AbstractHarnessPlugin,
    AgentContext,
    AgentDefinition,
    AgentSpec,
    DefinitionError,
    HarnessBuilder,
    PluginError,
)
from a13n_harness.capabilities import CodeActCapability
from harness_support import CALL, SEARCH, StreamScript, page_of, returns
from pydantic_ai.capabilities import AbstractCapability, Toolset
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import (
    ToolProxyCapability,
    ToolProxyConfig,
    ToolProxyGroup,
    ToolProxyPlan,
    ToolProxySelection,
)
from pydantic_ai_toolproxy.harness import ToolProxyPluginAdapter, build

COUNTS: Counter[str] = Counter()


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    return {42: 'Ada'}.get(customer_id, 'Unknown')


def server_status() -> str:
    """Report whether the service is up."""
    return 'up'


def page_tool(site: str) -> Any:
    def read_page(slug: str) -> str:
        return f'{site}:{slug}'

    read_page.__name__ = f'read_{site}_page'
    read_page.__doc__ = f'Read one page of the {site} site by its slug.'
    return read_page


class SitePlugin(AbstractHarnessPlugin):
    """A third-party style plugin: middleware plus one contributed toolset; counts every lifecycle call."""

    def __init__(self, plugin_id: str, site: str, extra: Sequence[AbstractCapability[AgentContext]] = ()) -> None:
        self._id = plugin_id
        self.site = site
        self.extra = tuple(extra)

    @property
    def plugin_id(self) -> str:
        return self._id

    def for_agent(self) -> SitePlugin:
        COUNTS[f'{self._id}.for_agent'] += 1
        return type(self)(self._id, self.site, self.extra)

    async def for_run(self, context: AgentContext) -> SitePlugin:
        COUNTS[f'{self._id}.for_run'] += 1
        return self

    def get_capabilities(self) -> Sequence[AbstractCapability[AgentContext]]:
        COUNTS[f'{self._id}.get_capabilities'] += 1
        return (Toolset(FunctionToolset([page_tool(self.site)])), *self.extra)

    async def wrap_run(self, exchange: Any, call_next: Any) -> Any:
        COUNTS[f'{self._id}.wrap_run'] += 1
        return await call_next(exchange)


@pytest.fixture(autouse=True)
def _reset() -> None:
    COUNTS.clear()


def crm() -> Toolset[Any]:
    return Toolset(FunctionToolset([customer_name], id='crm-tools'))


async def test_plan_groups_capabilities_and_plugins_into_one_surface() -> None:
    crm_source, status = crm(), Toolset(FunctionToolset([server_status]))
    plugins = (SitePlugin('plugin-docs', 'docs'), SitePlugin('plugin-wiki', 'wiki'), SitePlugin('plugin-blog', 'blog'))
    plan = ToolProxyPlan(
        groups={
            'crm': ToolProxySelection(description='Customer records', capabilities=(crm_source,)),
            'docs': ToolProxySelection(description='Project documentation', plugins=('plugin-docs',)),
            'wiki': ToolProxySelection(description='Team wiki', plugins=('plugin-wiki',)),
        }
    )
    script = StreamScript(
        [
            [(SEARCH, {'query': '', 'limit': 10})],
            [
                (CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}),
                (CALL, {'group': 'docs', 'tool': 'read_docs_page', 'arguments': {'slug': 'setup'}}),
                (CALL, {'group': 'wiki', 'tool': 'read_wiki_page', 'arguments': {'slug': 'oncall'}}),
            ],
            'done',
        ]
    )
    agent = build(
        HarnessBuilder(),
        AgentSpec(),
        output_type=str,
        model=script.model,
        capabilities=(crm_source, status),
        plugins=plugins,
        tool_proxy=plan,
    )
    result = await agent.run('x')
    assert result.status == 'completed'
    # One surface: exactly one pair of controls; unlisted sources (status, the blog plugin) stay direct.
    offered = script.offered(0)
    assert sorted(offered) == sorted([SEARCH, CALL, 'server_status', 'read_blog_page'])
    assert script.tool_def(CALL).parameters_json_schema['properties']['group']['enum'] == ['crm', 'docs', 'wiki']
    found = {(e['group'], e['tool']) for e in page_of(returns(result.all_messages(), SEARCH)[0])['tools']}
    assert found == {('crm', 'customer_name'), ('docs', 'read_docs_page'), ('wiki', 'read_wiki_page')}
    assert [p.content for p in returns(result.all_messages(), CALL)] == ['Ada', 'docs:setup', 'wiki:oncall']
    # The harness still binds every plugin once, and their middleware runs.
    for plugin_id in ('plugin-docs', 'plugin-wiki', 'plugin-blog'):
        assert COUNTS[f'{plugin_id}.for_agent'] == 1
        assert COUNTS[f'{plugin_id}.get_capabilities'] == 1
        assert COUNTS[f'{plugin_id}.for_run'] == 1
        assert COUNTS[f'{plugin_id}.wrap_run'] == 1
    await agent.run('again')
    assert COUNTS['plugin-docs.get_capabilities'] == 1 and COUNTS['plugin-docs.wrap_run'] == 2


async def test_apply_returns_an_updated_definition_and_changes_neither_the_plan_nor_the_original() -> None:
    crm_source = crm()
    definition = AgentDefinition(
        agent=AgentSpec(), output_type=str, capabilities=(crm_source,), model=StreamScript([]).model
    )
    groups = {'crm': ToolProxySelection(description='Customer records', capabilities=(crm_source,))}
    plan = ToolProxyPlan(groups=groups, config=ToolProxyConfig(max_results=3))
    applied = plan.apply(definition)
    assert isinstance(applied, AgentDefinition) and applied is not definition
    assert definition.capabilities == (crm_source,) and definition.plugins == ()
    (surface,) = [c for c in applied.capabilities if isinstance(c, ToolProxyCapability)]
    assert list(surface.groups) == ['crm'] and surface.config.max_results == 3
    assert HarnessBuilder().build(applied) is not None
    # Immutable: the plan copied the mapping, refuses assignment, and is unchanged by apply().
    groups['other'] = ToolProxySelection(description='Other', capabilities=(crm(),))
    assert list(plan.groups) == ['crm']
    with pytest.raises(TypeError):
        plan.groups['x'] = groups['other']  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.config = ToolProxyConfig()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.groups['crm'].plugins = ('p',)  # type: ignore[misc]
    # A plan can be applied again to the original definition (each application gets its own surface).
    again = plan.apply(definition)
    (surface2,) = [c for c in again.capabilities if isinstance(c, ToolProxyCapability)]
    assert surface2 is not surface


def definition_with(*capabilities: Any, plugins: Sequence[AbstractHarnessPlugin] = ()) -> AgentDefinition[Any]:
    return AgentDefinition(
        agent=AgentSpec(),
        output_type=str,
        capabilities=capabilities,
        plugins=tuple(plugins),
        model=StreamScript([]).model,
    )


def test_selected_capability_must_already_be_in_the_definition() -> None:
    plan = ToolProxyPlan(groups={'crm': ToolProxySelection(description='Customers', capabilities=(crm(),))})
    with pytest.raises(ValueError, match=r"selects .*Toolset.*not in the definition's capabilities.*add that instance"):
        plan.apply(definition_with(crm()))


def test_selected_plugin_must_be_available_to_the_builder() -> None:
    plan = ToolProxyPlan(groups={'docs': ToolProxySelection(description='Docs', plugins=('plugin-docs',))})
    with pytest.raises(ValueError, match=r"plugin 'plugin-docs', which is not available.*\['plugin-wiki'\].*plugins="):
        plan.apply(definition_with(plugins=[SitePlugin('plugin-wiki', 'wiki')]))
    assert COUNTS == {}  # nothing was bound


def test_a_source_selected_by_two_groups_is_rejected() -> None:
    source = crm()
    with pytest.raises(ValueError, match=r"selected by ToolProxy groups 'a' and 'b'"):
        ToolProxyPlan(
            groups={
                'a': ToolProxySelection(description='A', capabilities=(source,)),
                'b': ToolProxySelection(description='B', capabilities=(source,)),
            }
        )
    with pytest.raises(ValueError, match=r"Plugin 'plugin-docs' is selected by ToolProxy groups 'a' and 'b'"):
        ToolProxyPlan(
            groups={
                'a': ToolProxySelection(description='A', plugins=('plugin-docs',)),
                'b': ToolProxySelection(description='B', plugins=('plugin-docs',)),
            }
        )


def test_a_source_both_grouped_and_direct_is_rejected() -> None:
    source = crm()
    plan = ToolProxyPlan(groups={'crm': ToolProxySelection(description='Customers', capabilities=(source,))})
    with pytest.raises(ValueError, match=r'lists 2 times: a source is either grouped or direct'):
        plan.apply(definition_with(source, source))


def test_a_plugin_contribution_also_installed_directly_is_rejected_at_build() -> None:
    shared = Toolset(FunctionToolset([server_status]))
    plan = ToolProxyPlan(groups={'docs': ToolProxySelection(description='Docs', plugins=('plugin-docs',))})
    definition = plan.apply(definition_with(shared, plugins=[SitePlugin('plugin-docs', 'docs', extra=(shared,))]))
    with pytest.raises(ValueError, match=r'contributes .*Toolset.*also installs directly.*either grouped or direct'):
        HarnessBuilder().build(definition)


def test_a_source_grouped_by_a_concrete_proxy_and_by_the_plan_is_rejected() -> None:
    source = crm()
    concrete = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=source, description='Customers')})
    plan = ToolProxyPlan(groups={'crm2': ToolProxySelection(description='Customers', capabilities=(source,))})
    with pytest.raises(
        ValueError, match=r"grouped both by a ToolProxyCapability already in the definition \(group 'crm'\)"
    ):
        plan.apply(definition_with(concrete, source))


def test_a_second_proxy_surface_is_rejected() -> None:
    other = ToolProxyCapability(
        groups={'billing': ToolProxyGroup(source=FunctionToolset([server_status]), description='B')}
    )
    source = crm()
    plan = ToolProxyPlan(groups={'crm': ToolProxySelection(description='Customers', capabilities=(source,))})
    with pytest.raises(ValueError, match=r'one proxy surface, never competing ones'):
        plan.apply(definition_with(other, source))
    applied = plan.apply(definition_with(source))
    with pytest.raises(ValueError, match=r'already has a ToolProxyCapability'):
        plan.apply(applied)


def test_selection_and_plan_reject_bad_values_with_clear_errors() -> None:
    with pytest.raises(ValueError, match=r'selects no capability and no plugin'):
        ToolProxySelection(description='Nothing')
    with pytest.raises(TypeError, match=r'capability instances already in the definition.*FunctionToolset'):
        ToolProxySelection(description='X', capabilities=(FunctionToolset([server_status]),))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r'non-blank plugin IDs'):
        ToolProxySelection(description='X', plugins=(' ',))
    with pytest.raises(ValueError, match=r'defer_loading=True'):
        ToolProxySelection(
            description='X', capabilities=(Toolset(FunctionToolset([server_status]), defer_loading=True),)
        )
    with pytest.raises(ValueError, match=r'a__b'):
        ToolProxyPlan(groups={'a__b': ToolProxySelection(description='X', plugins=('p',))})
    with pytest.raises(ValueError, match=r"'x'"):
        ToolProxyPlan(groups={'x': ToolProxySelection(description='   ', plugins=('p',))})
    with pytest.raises(TypeError, match=r'needs an a13n-harness AgentDefinition'):
        ToolProxyPlan(groups={'x': ToolProxySelection(description='X', plugins=('p',))}).apply(object())  # type: ignore[arg-type]


def test_build_helper_argument_rules() -> None:
    plan = ToolProxyPlan(groups={'docs': ToolProxySelection(description='Docs', plugins=('plugin-docs',))})
    definition = definition_with(plugins=[SitePlugin('plugin-docs', 'docs')])
    with pytest.raises(TypeError, match=r'takes no construction arguments'):
        build(HarnessBuilder(), definition, output_type=str, tool_proxy=plan)
    with pytest.raises(TypeError, match=r'requires the keyword-only output_type'):
        build(HarnessBuilder(), AgentSpec(), tool_proxy=plan)
    assert build(HarnessBuilder(), definition, tool_proxy=plan) is not None


def test_grouping_never_authorizes_a_reserved_capability() -> None:
    """The harness validates a grouped plugin's original contributions: a plugin may not contribute CodeAct."""
    plugin = SitePlugin('plugin-docs', 'docs', extra=(CodeActCapability(),))
    plan = ToolProxyPlan(groups={'docs': ToolProxySelection(description='Docs', plugins=('plugin-docs',))})
    with pytest.raises(DefinitionError) as info:
        HarnessBuilder().build(plan.apply(definition_with(plugins=[plugin])))
    assert info.value.code == 'capability_scope_invalid'


async def test_run_bound_lookup_of_a_grouped_plugin_sees_the_adapter() -> None:
    """Known limit of the public plugin API: the run-bound plugin index holds the adapter, not the plugin."""
    seen: dict[str, Any] = {}

    class Inspector(SitePlugin):
        async def wrap_run(self, exchange: Any, call_next: Any) -> Any:
            plugins = exchange.context.plugins
            seen['adapter'] = plugins.get('plugin-docs')
            try:
                plugins.require('plugin-docs', SitePlugin)
            except PluginError as e:
                seen['error'] = (e.code, str(e))
            return await call_next(exchange)

    plan = ToolProxyPlan(groups={'docs': ToolProxySelection(description='Docs', plugins=('plugin-docs',))})
    plugins = [SitePlugin('plugin-docs', 'docs'), Inspector('inspector', 'inspect')]
    agent = build(
        HarnessBuilder(),
        AgentSpec(),
        output_type=str,
        model=StreamScript(['done']).model,
        plugins=plugins,
        tool_proxy=plan,
    )
    assert (await agent.run('x')).status == 'completed'
    assert isinstance(seen['adapter'], ToolProxyPluginAdapter) and isinstance(seen['adapter'].wrapped, SitePlugin)
    assert seen['error'] == ('plugin_type_mismatch', 'Run-bound plugin has an unexpected type.')
