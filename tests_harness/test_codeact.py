"""ToolProxy under a13n-harness CodeAct (spec: "Use with CodeAct")."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from a13n_harness import AgentSpec, HarnessBuilder
from a13n_harness.capabilities import CodeActCapability
from a13n_harness.toolsets import CodeActPolicyToolset, CodeActToolPolicy
from harness_support import CALL, SEARCH, StreamScript, page_of, returns
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

CALLED: list[str] = []
ACTIVE = {'now': 0, 'peak': 0}


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    CALLED.append('customer_name')
    return {42: 'Ada', 7: 'Grace'}.get(customer_id, 'Unknown')


def delete_customer(customer_id: int) -> str:
    """Delete a customer record for good."""
    CALLED.append('delete_customer')
    return f'deleted {customer_id}'


async def slow_lookup(customer_id: int) -> int:
    """Look up a customer slowly (reports how many lookups ran at once)."""
    ACTIVE['now'] += 1
    ACTIVE['peak'] = max(ACTIVE['peak'], ACTIVE['now'])
    await asyncio.sleep(0.05)
    ACTIVE['now'] -= 1
    CALLED.append(f'slow_lookup {customer_id}')
    return customer_id


def invoice_total(invoice_id: int) -> float:
    """Total amount of an invoice."""
    CALLED.append('invoice_total')
    return 12.5


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLED.clear()
    ACTIVE.update(now=0, peak=0)


def crm_source() -> CodeActPolicyToolset:
    return CodeActPolicyToolset(
        wrapped=FunctionToolset([customer_name, delete_customer, slow_lookup]),
        policy=CodeActToolPolicy(tools={'customer_name': True, 'delete_customer': False, 'slow_lookup': True}),
        reject_unknown_tools=True,
    )


def agent_for(script: StreamScript) -> Any:
    proxy = ToolProxyCapability(
        groups={
            'crm': ToolProxyGroup(source=crm_source(), description='Customer records'),
            # No CodeAct policy at all (like an MCP source without an owner policy).
            'billing': ToolProxyGroup(source=FunctionToolset([invoice_total]), description='Invoices and payments'),
        }
    )
    return HarnessBuilder().build(
        AgentSpec(), output_type=str, model=script.model, capabilities=(proxy, CodeActCapability())
    )


def run_code(code: str) -> list[tuple[str, dict[str, Any]]]:
    return [('run_code', {'code': code})]


def code_result(result: Any) -> Any:
    (part,) = returns(result.all_messages(), 'run_code')
    return part.content


SEARCH_AND_CALL = """
found = await search_proxy_tools(query="customer name", group="crm")
match = found["tools"][0]
name = await call_proxy_tool(group=match["group"], tool=match["tool"], arguments={"customer_id": 42})
name
"""


async def test_code_discovers_and_calls_through_the_controls_and_usage_counts_three() -> None:
    script = StreamScript([run_code(SEARCH_AND_CALL), 'done'])
    result = await agent_for(script).run('x')
    assert result.status == 'completed'
    assert code_result(result) == 'Ada' and CALLED == ['customer_name']
    # runner + search + target (the envelope is resolved by CodeAct, not executed)
    assert result.usage.tool_calls == 3


async def test_runner_plus_one_proxied_target_counts_two() -> None:
    code = 'await call_proxy_tool(group="crm", tool="customer_name", arguments={"customer_id": 7})'
    result = await agent_for(StreamScript([run_code(code), 'done'])).run('x')
    assert code_result(result) == 'Grace'
    assert result.usage.tool_calls == 2


async def test_runner_directory_lists_the_controls_and_no_member() -> None:
    script = StreamScript(['done'])
    await agent_for(script).run('x')
    runner = script.tool_def('run_code').description
    directory = runner.split('CodeAct callable host tools:', 1)[1]
    assert f'### `{SEARCH}`' in directory and f'### `{CALL}`' in directory
    for member in ('customer_name', 'delete_customer', 'slow_lookup', 'invoice_total'):
        assert member not in directory
    # The model itself is offered the controls and the runner, never a member.
    assert not any('__' in name for name in script.offered(0))


async def test_grouping_grants_no_codeact_eligibility() -> None:
    code = """
outcomes = []
for group, tool in [("crm", "delete_customer"), ("billing", "invoice_total")]:
    try:
        await call_proxy_tool(group=group, tool=tool, arguments={"customer_id": 1} if group == "crm" else {"invoice_id": 1})
        outcomes.append("ran")
    except Exception as e:
        outcomes.append(str(e))
outcomes
"""
    script = StreamScript(
        [
            run_code(code),
            # The same targets still work through ordinary model proxy calls.
            [(CALL, {'group': 'crm', 'tool': 'delete_customer', 'arguments': {'customer_id': 1}})],
            [(CALL, {'group': 'billing', 'tool': 'invoice_total', 'arguments': {'invoice_id': 1}})],
            'done',
        ]
    )
    result = await agent_for(script).run('x')
    outcomes = code_result(result)
    assert len(outcomes) == 2
    assert all('is not enabled for CodeAct' in o for o in outcomes), outcomes
    assert [p.content for p in returns(result.all_messages(), CALL)] == ['deleted 1', 12.5]
    assert CALLED == ['delete_customer', 'invoice_total']  # only the two ordinary model calls ran


async def test_search_results_report_the_targets_own_codeact_policy() -> None:
    script = StreamScript([[(SEARCH, {'query': '', 'limit': 10})], 'done'])
    result = await agent_for(script).run('x')
    page = page_of(returns(result.all_messages(), SEARCH)[0])
    eligible = {(e['group'], e['tool']): e['codeact_eligible'] for e in page['tools']}
    assert eligible == {
        ('crm', 'customer_name'): True,
        ('crm', 'delete_customer'): False,
        ('crm', 'slow_lookup'): True,
        ('billing', 'invoice_total'): False,
    }


async def test_proxy_calls_inside_asyncio_gather_run_one_at_a_time() -> None:
    code = """
import asyncio
results = await asyncio.gather(
    call_proxy_tool(group="crm", tool="slow_lookup", arguments={"customer_id": 1}),
    call_proxy_tool(group="crm", tool="slow_lookup", arguments={"customer_id": 2}),
    call_proxy_tool(group="crm", tool="slow_lookup", arguments={"customer_id": 3}),
)
results
"""
    result = await agent_for(StreamScript([run_code(code), 'done'])).run('x')
    assert code_result(result) == [1, 2, 3]
    assert sorted(CALLED) == ['slow_lookup 1', 'slow_lookup 2', 'slow_lookup 3']
    assert ACTIVE['peak'] == 1
    assert result.usage.tool_calls == 4  # runner + three targets


async def test_a_bad_envelope_from_code_fails_inside_the_sandbox_without_running_anything() -> None:
    code = """
try:
    await call_proxy_tool(group="crm", tool="no_such_tool", arguments={})
    out = "ran"
except Exception as e:
    out = str(e)
out
"""
    result = await agent_for(StreamScript([run_code(code), 'done'])).run('x')
    text = json.dumps(code_result(result))
    assert 'unavailable' in text or 'no tool' in text, text
    assert CALLED == []
