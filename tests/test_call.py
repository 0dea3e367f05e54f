"""The call control in real Agent runs: dispatch, retries, usage, approvals, bad envelopes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import CallDeferred, UsageLimitExceeded
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, RunContext, Tool, ToolDenied
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import UsageLimits
from support import CALL, Script, returns
from tools_fixtures import CALLS, billing_toolset, crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup


def proxy(**groups: Any) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(groups={n: ToolProxyGroup(source=s, description=f'{n} ops') for n, s in groups.items()})


async def run_calls(
    calls: list[dict[str, Any]],
    caps: list[Any] | None = None,
    usage_limits: UsageLimits | None = None,
    **agent_kwargs: Any,
) -> Any:
    script = Script([[(CALL, c)] for c in calls] + ['done'])
    agent = Agent(
        script.model, capabilities=caps or [proxy(crm=crm_toolset(), billing=billing_toolset())], **agent_kwargs
    )
    return await agent.run('x', usage_limits=usage_limits)


def call_returns(result: Any) -> list[Any]:
    return [p for p in returns(result.all_messages()) if p.tool_name == CALL]


async def test_success_counts_two_tool_calls() -> None:
    result = await run_calls([{'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}])
    (part,) = call_returns(result)
    assert part.content == 'Ada' and part.outcome == 'success'
    assert result.usage.tool_calls == 2
    assert CALLS == ['customer_name']


async def test_arguments_as_json_string_and_native_conversion() -> None:
    result = await run_calls([{'group': 'crm', 'tool': 'customer_name', 'arguments': '{"customer_id": "42"}'}])
    assert call_returns(result)[0].content == 'Ada'  # "42" converted to int by the target's own validator


@pytest.mark.parametrize('arguments', [[1, 2], 5, 'not json', '[1]'])
async def test_bad_argument_shapes_get_a_retry_describing_the_envelope(arguments: Any) -> None:
    result = await run_calls([{'group': 'crm', 'tool': 'customer_name', 'arguments': arguments}])
    (part,) = call_returns(result)
    assert part.outcome == 'retried'
    assert '"arguments": {...}' in part.model_response_str(wrap_if_error=False)
    assert CALLS == []


async def test_target_validation_error_comes_back_on_the_envelope_call_id() -> None:
    result = await run_calls([{'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 'abc'}}])
    (part,) = call_returns(result)
    assert part.outcome == 'retried' and part.tool_call_id == 'call_1_0'
    assert 'customer_id' in part.model_response_str(wrap_if_error=False)
    assert CALLS == []


async def test_target_model_retry_uses_the_targets_budget_and_envelope_call_id() -> None:
    result = await run_calls(
        [
            {'group': 'crm', 'tool': 'update_customer_email', 'arguments': {'customer_id': 1, 'email': 'bad'}},
            {'group': 'crm', 'tool': 'update_customer_email', 'arguments': {'customer_id': 1, 'email': 'a@b.c'}},
        ]
    )
    first, second = call_returns(result)
    assert first.outcome == 'retried' and first.tool_call_id == 'call_1_0'
    assert 'email must contain @' in first.model_response_str(wrap_if_error=False)
    assert second.content == '1:a@b.c'


async def test_unknown_group_and_tool_retries_are_short() -> None:
    caps = [
        proxy(
            crm=crm_toolset(),
            billing=FunctionToolset([Tool(lambda: 1, name=f'op_{i}', description='x') for i in range(200)]),
        )
    ]
    result = await run_calls(
        [
            {'group': 'sales', 'tool': 'x', 'arguments': {}},
            {'group': 'crm', 'tool': 'customer_nme', 'arguments': {}},
            {'group': 'billing', 'tool': 'op_1000', 'arguments': {}},
        ],
        caps,
        retries=5,
    )
    g, t, many = (p.model_response_str(wrap_if_error=False) for p in call_returns(result))
    assert 'crm, billing' in g
    assert 'customer_name' in t
    assert many.count('op_') <= 3 + 1  # at most 3 close names, never the catalogue


async def test_tool_calls_limit_is_checked_before_the_target_runs() -> None:
    with pytest.raises(UsageLimitExceeded):
        await run_calls(
            [{'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}],
            usage_limits=UsageLimits(tool_calls_limit=1),
        )
    assert CALLS == []
    result = await run_calls(
        [{'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}],
        usage_limits=UsageLimits(tool_calls_limit=2),
    )
    assert result.usage.tool_calls == 2


def guarded_toolset() -> FunctionToolset[Any]:
    def delete_account(account_id: int) -> str:
        """Delete an account (needs approval)."""
        CALLS.append('delete_account')
        return f'deleted {account_id}'

    def ask_human(question: str) -> str:
        """Defer to an external system."""
        raise CallDeferred()

    return FunctionToolset([Tool(delete_account, requires_approval=True), ask_human])


@pytest.mark.parametrize('approve', [True, False])
async def test_inline_approval_handler_approves_or_denies(approve: bool) -> None:
    async def handler(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        return (
            requests.build_results(approve_all=approve)
            if approve
            else DeferredToolResults(approvals={c.tool_call_id: ToolDenied('not today') for c in requests.approvals})
        )

    caps = [proxy(admin=guarded_toolset()), HandleDeferredToolCalls(handler=handler)]
    result = await run_calls([{'group': 'admin', 'tool': 'delete_account', 'arguments': {'account_id': 3}}], caps)
    (part,) = call_returns(result)
    if approve:
        assert part.content == 'deleted 3' and CALLS == ['delete_account']
    else:
        assert part.outcome == 'failed' and 'not today' in part.model_response_str(wrap_if_error=False) and CALLS == []


async def test_unresolved_approval_or_deferral_fails_the_call_without_suspending() -> None:
    result = await run_calls(
        [
            {'group': 'admin', 'tool': 'delete_account', 'arguments': {'account_id': 3}},
            {'group': 'admin', 'tool': 'ask_human', 'arguments': {'question': 'hi'}},
        ],
        [proxy(admin=guarded_toolset())],
    )
    assert result.output == 'done'  # the run was not suspended
    for part in call_returns(result):
        assert part.outcome == 'failed'
        assert 'host interaction' in part.model_response_str(
            wrap_if_error=False
        ) and 'directly' in part.model_response_str(wrap_if_error=False)
    assert CALLS == []


async def test_unexpected_failure_says_outcome_uncertain_and_run_continues() -> None:
    result = await run_calls([{'group': 'crm', 'tool': 'explode', 'arguments': {'reason': 'db'}}])
    (part,) = call_returns(result)
    assert part.outcome == 'failed'
    text = part.model_response_str(wrap_if_error=False)
    assert 'uncertain' in text and 'Check the current state' in text and 'backend down: db' in text
    assert result.output == 'done'


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError('str() of this error raises')


async def test_an_error_whose_text_cannot_be_read_is_still_an_uncertain_failure() -> None:
    """A target's exception whose `str()` raises: the model still reads an uncertain-outcome failure naming the
    error's type, and the run goes on (the proxy's message building never raises an error of its own)."""

    def flaky_export(path: str) -> str:
        """Export a report."""
        raise _Unprintable

    proxy = ToolProxyCapability(
        groups={'reports': ToolProxyGroup(source=FunctionToolset([flaky_export]), description='Reports')}
    )
    script = Script([[(CALL, {'group': 'reports', 'tool': 'flaky_export', 'arguments': {'path': '/tmp/r'}})]])
    result = await Agent(script.model, capabilities=[proxy]).run('go')
    (part,) = call_returns(result)
    text = part.model_response_str(wrap_if_error=False)
    assert part.outcome == 'failed' and 'uncertain' in text and '_Unprintable' in text, text
    assert result.output == 'done'


async def test_call_control_is_sequential() -> None:
    active = 0
    peak = 0

    async def slow(n: int) -> int:
        """Sleep a little and report."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return n

    script = Script([[(CALL, {'group': 'g', 'tool': 'slow', 'arguments': {'n': i}}) for i in range(3)], 'done'])
    agent = Agent(script.model, capabilities=[proxy(g=FunctionToolset([slow]))])
    result = await agent.run('x')
    assert sorted(p.content for p in call_returns(result)) == [0, 1, 2]
    assert peak == 1
