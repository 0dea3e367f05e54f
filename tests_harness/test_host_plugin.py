"""The spec's `HostToolsPlugin` example ("Plugin-contributed sources"), unchanged but for our imports."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from a13n_harness import AbstractHarnessPlugin, AgentContext, AgentSpec, HarnessBuilder
from harness_support import CALL, SEARCH, StreamScript, page_of, returns
from pydantic_ai.capabilities import AbstractCapability, Toolset
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

# --- the spec's example, verbatim (imports of ToolProxyCapability/ToolProxyGroup come from our package) ---


@dataclass
class HostToolsPlugin(AbstractHarnessPlugin):
    source_factory: Callable[[], Mapping[str, AbstractCapability[AgentContext]]]
    group_descriptions: Mapping[str, str]
    sources: Mapping[str, AbstractCapability[AgentContext]] = field(default_factory=dict)

    @property
    def plugin_id(self) -> str:
        return 'host-tools'

    def for_agent(self):
        return replace(self, sources=dict(self.source_factory()))

    def get_capabilities(self) -> Sequence[AbstractCapability[AgentContext]]:
        direct = []
        groups = {}
        for name, source in self.sources.items():
            if name in self.group_descriptions:
                groups[name] = ToolProxyGroup(source=source, description=self.group_descriptions[name])
            else:
                direct.append(source)
        if groups:
            direct.append(ToolProxyCapability(groups=groups))
        return tuple(direct)


# --- the host's trusted factory and the tests ---

FACTORY_CALLS: list[int] = []


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    return {42: 'Ada'}.get(customer_id, 'Unknown')


def server_status() -> str:
    """Report whether the service is up."""
    return 'up'


def build_sources() -> Mapping[str, AbstractCapability[AgentContext]]:
    FACTORY_CALLS.append(1)
    return {'crm': Toolset(FunctionToolset([customer_name])), 'status': Toolset(FunctionToolset([server_status]))}


def agent_with(plugin: HostToolsPlugin, script: StreamScript) -> Any:
    return HarnessBuilder().build(AgentSpec(), output_type=str, model=script.model, plugins=(plugin,))


async def test_host_tools_plugin_groups_the_configured_sources() -> None:
    FACTORY_CALLS.clear()
    plugin = HostToolsPlugin(source_factory=build_sources, group_descriptions={'crm': 'Customer records'})
    script = StreamScript(
        [
            [(SEARCH, {'query': 'customer name', 'group': 'crm'})],
            [
                (CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}),
                ('server_status', {}),
            ],
            'done',
        ]
    )
    agent = agent_with(plugin, script)
    result = await agent.run('x')
    assert result.status == 'completed'
    assert sorted(script.offered(0)) == sorted([SEARCH, CALL, 'server_status'])
    assert page_of(returns(result.all_messages(), SEARCH)[0])['tools'][0]['tool'] == 'customer_name'
    assert returns(result.all_messages(), CALL)[0].content == 'Ada'
    assert returns(result.all_messages(), 'server_status')[0].content == 'up'
    await agent.run('again')
    assert FACTORY_CALLS == [1]  # sources are constructed once per executable


async def test_empty_group_descriptions_keep_every_source_direct() -> None:
    plugin = HostToolsPlugin(source_factory=build_sources, group_descriptions={})
    script = StreamScript([[('customer_name', {'customer_id': 42})], 'done'])
    result = await agent_with(plugin, script).run('x')
    assert sorted(script.offered(0)) == ['customer_name', 'server_status']
    assert returns(result.all_messages(), 'customer_name')[0].content == 'Ada'
