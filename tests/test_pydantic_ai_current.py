"""What the newest Pydantic AI added, with the proxy in real `Agent` runs: `ToolSearch(tools=...)` (2.78) as the
one-line way to put an agent's tools behind `search_strategy()`, and capability authority (`with_authority`, 2.78):
a grouped capability lowered below operator authority never reaches the model at more through the proxy.

Each test is skipped on a Pydantic AI without the feature (2.61-2.68), which the package still accepts.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, ToolSearch
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, last_return, page_of

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup, search_strategy

SELECTS_TOOLS = 'tools' in inspect.signature(ToolSearch).parameters
HAS_AUTHORITY = hasattr(AbstractCapability, 'with_authority')


def get_weather(city: str) -> str:
    """Current weather conditions of a city."""
    return f'sunny in {city}'


def send_email(to: str, body: str) -> str:
    """Send an email message to a recipient."""
    return f'sent to {to}'


def lookup_customer(customer_id: int) -> str:
    """Look up a customer record by its ID."""
    return 'Ada'


@pytest.mark.skipif(not SELECTS_TOOLS, reason='ToolSearch(tools=...) is Pydantic AI 2.78 and newer')
async def test_tool_search_tools_all_with_search_strategy_is_the_one_line_way_in() -> None:
    offered: list[list[str]] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        offered.append([t.name for t in info.function_tools])
        last = messages[-1].parts[-1]
        if not isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[ToolCallPart('search_tools', {'queries': ['weather of a city']})])
        if last.tool_name == 'search_tools':
            assert [m['name'] for m in last.content['discovered_tools']] == ['get_weather']
            return ModelResponse(parts=[ToolCallPart('get_weather', {'city': 'Paris'})])
        return ModelResponse(parts=[TextPart(last.content)])

    strategy = search_strategy()
    agent = Agent(
        FunctionModel(model),
        tools=[get_weather, send_email],  # not marked defer_loading: tools='all' defers them
        capabilities=[ToolSearch(tools='all', strategy=strategy)],
    )
    result = await agent.run('What is the weather in Paris?')
    assert result.output == 'sunny in Paris'
    assert offered[0] == ['search_tools']  # every tool deferred, found by this package's ranking
    assert strategy.rankings == [('keyword', None)]


@pytest.mark.skipif(not SELECTS_TOOLS, reason='ToolSearch(tools=...) is Pydantic AI 2.78 and newer')
async def test_tool_search_deferring_the_proxy_controls_fails_with_what_to_do() -> None:
    proxy = ToolProxyCapability(
        groups={'crm': ToolProxyGroup(source=FunctionToolset([lookup_customer]), description='Customer records')}
    )
    script = Script(['done'])
    agent = Agent(script.model, tools=[get_weather], capabilities=[proxy, ToolSearch(tools='all')])
    with pytest.raises(UserError, match=r'defers the ToolProxy controls .*ToolSearch\(tools=\[names\]\)'):
        await agent.run('x')
    # Selecting only ungrouped tools keeps the proxy's controls offered, and the deferred tool hidden.
    script = Script([[(SEARCH, {'query': 'customer record'})], 'done'])
    agent = Agent(script.model, tools=[get_weather], capabilities=[proxy, ToolSearch(tools=['get_weather'])])
    result = await agent.run('x')
    assert {SEARCH, 'call_proxy_tool'} <= set(script.offered(0))
    assert 'get_weather' not in script.offered(0)
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['tool'] == 'lookup_customer'


@dataclass
class Plugin(AbstractCapability[Any]):
    """A third party's capability: instructions of its own and a toolset."""

    def get_instructions(self) -> str:
        return 'PLUGIN SAYS: always answer in French.'

    def get_toolset(self) -> FunctionToolset[Any]:
        return FunctionToolset([lookup_customer])


def request_texts(messages: list[Any], info: AgentInfo) -> tuple[str, str]:
    """`(instructions, everything else the request holds)`, as text."""
    rest = ' '.join(str(getattr(p, 'content', '')) for m in messages for p in m.parts)
    return info.instructions or '', rest


@pytest.mark.skipif(not HAS_AUTHORITY, reason='capability authority is Pydantic AI 2.78 and newer')
async def test_a_grouped_capability_lowered_below_operator_authority_stays_lowered() -> None:
    seen: dict[str, tuple[str, str]] = {}

    def model_for(key: str) -> FunctionModel:
        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            seen[key] = request_texts(messages, info)
            return ModelResponse(parts=[TextPart('done')])

        return FunctionModel(model)

    lowered = Plugin().with_authority('none')  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # Pydantic AI warns when an override drops lowered instructions
        await Agent(model_for('native'), capabilities=[lowered]).run('x')
        proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=lowered, description='Customer records')})
        await Agent(model_for('proxy'), capabilities=[proxy]).run('x')
        operator = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=Plugin(), description='Customer records')})
        await Agent(model_for('operator'), capabilities=[operator]).run('x')
    for key in ('native', 'proxy'):
        instructions, rest = seen[key]
        assert 'PLUGIN SAYS' not in instructions, key  # never in the instruction prefix, at operator authority
        assert 'PLUGIN SAYS' in rest, key  # stated in history as data, as Pydantic AI does
    assert 'search_proxy_tools' in seen['proxy'][0]  # the proxy's own guidance is still an instruction
    instructions, _ = seen['operator']
    assert 'PLUGIN SAYS' in instructions and instructions.index('PLUGIN SAYS') < instructions.index(
        'search_proxy_tools'
    )
