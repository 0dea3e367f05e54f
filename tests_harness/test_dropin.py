"""`ToolProxyCapability` is a drop-in capability of a real a13n-harness agent."""

from __future__ import annotations

from typing import Any

import pytest
from a13n_harness import AgentSpec, DefinitionError, HarnessBuilder
from harness_support import CALL, SEARCH, StreamScript, page_of, returns, text_of
from pydantic_ai.capabilities import CapabilityOrdering, Toolset
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

SOURCE_INSTRUCTIONS = 'Use numeric customer IDs, not display names.'
CALLED: list[str] = []


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    CALLED.append('customer_name')
    return {42: 'Ada'}.get(customer_id, 'Unknown')


def server_status() -> str:
    """Report whether the service is up."""
    return 'up'


def crm_proxy() -> ToolProxyCapability[Any]:
    source = FunctionToolset([customer_name], instructions=SOURCE_INSTRUCTIONS)
    return ToolProxyCapability(
        groups={'crm': ToolProxyGroup(source=source, description='Customer records and account operations')}
    )


def build(script: StreamScript, spec: AgentSpec | None = None) -> Any:
    return HarnessBuilder().build(
        spec or AgentSpec(),
        output_type=str,
        model=script.model,
        capabilities=(crm_proxy(), Toolset(FunctionToolset([server_status]))),
    )


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLED.clear()


async def test_drop_in_build_then_search_and_call_a_grouped_tool() -> None:
    script = StreamScript(
        [
            [(SEARCH, {'query': 'customer name', 'group': 'crm'})],
            [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            'finished',
        ]
    )
    result = await build(script).run('Who is customer 42?')
    assert result.status == 'completed' and result.output == 'finished'
    offered = script.offered(0)
    assert {SEARCH, CALL, 'server_status'} <= set(offered)
    assert not any('crm__' in name for info in script.infos for name in (t.name for t in info.function_tools))
    (search,) = returns(result.all_messages(), SEARCH)
    entry = page_of(search)['tools'][0]
    assert (entry['group'], entry['tool']) == ('crm', 'customer_name')
    assert entry['parameters_json_schema']['properties']['customer_id']['type'] == 'integer'
    (call,) = returns(result.all_messages(), CALL)
    assert call.content == 'Ada' and CALLED == ['customer_name']
    # search + (envelope + target)
    assert result.usage.tool_calls == 3
    # The control descriptions carry the current group summary and enum.
    assert 'crm: Customer records and account operations' in script.tool_def(CALL).description
    assert script.tool_def(CALL).parameters_json_schema['properties']['group']['enum'] == ['crm']


async def test_guidance_and_source_instructions_follow_agent_spec_toolset_instructions() -> None:
    def turns() -> list[Any]:
        return [[(SEARCH, {'query': 'customer', 'group': 'crm'})], 'done']

    on, off = StreamScript(turns()), StreamScript(turns())
    result_on = await build(on).run('x')
    result_off = await build(off, AgentSpec(toolset_instructions=False)).run('x')

    prompt_on = on.infos[0].instructions or ''
    assert 'call `search_proxy_tools` with keywords' in prompt_on
    assert SOURCE_INSTRUCTIONS not in prompt_on  # withheld from the prompt ...
    assert page_of(returns(result_on.all_messages(), SEARCH)[0])['tools'][0]['instructions'] == [SOURCE_INSTRUCTIONS]

    prompt_off = off.infos[0].instructions or ''
    assert 'search_proxy_tools' not in prompt_off and SOURCE_INSTRUCTIONS not in prompt_off
    assert page_of(returns(result_off.all_messages(), SEARCH)[0])['tools'][0]['instructions'] == []


async def test_model_calling_a_member_directly_gets_a_retry_and_the_tool_never_runs() -> None:
    script = StreamScript([[('crm__customer_name', {'customer_id': 42})], 'done'])
    result = await build(script).run('x')
    assert result.status == 'completed'
    parts = [
        p
        for m in result.all_messages()
        for p in getattr(m, 'parts', ())
        if getattr(p, 'tool_name', None) == 'crm__customer_name'
    ]
    retry = [p for p in parts if p.__class__.__name__ in ('RetryPromptPart', 'ToolReturnPart')]
    assert retry and 'cannot be called directly' in text_of(retry[-1]) and CALL in text_of(retry[-1])
    assert CALLED == []


def test_harness_contract_rejects_a_proxy_that_claims_to_wrap_the_tool_surface() -> None:
    """Why ToolProxyCapability declares no ordering: the harness reserves the outer position."""

    class OutermostProxy(ToolProxyCapability[Any]):
        def get_ordering(self) -> CapabilityOrdering:
            return CapabilityOrdering(position='outermost')

    proxy = OutermostProxy(
        groups={'crm': ToolProxyGroup(source=FunctionToolset([customer_name]), description='Customers')}
    )
    with pytest.raises(DefinitionError) as info:
        HarnessBuilder().build(AgentSpec(), output_type=str, model=StreamScript([]).model, capabilities=(proxy,))
    assert info.value.code == 'tool_surface_order_invalid'
    assert 'Only ToolSearch, CodeAct, and the tool execution boundary may wrap the mandatory tool surface.' in str(
        info.value
    )
