"""Approvals under a13n-harness are inline only, as in plain Pydantic AI."""

from __future__ import annotations

from typing import Any

import pytest
from a13n_harness import AgentSpec, HarnessBuilder
from a13n_harness.capabilities import CodeActCapability
from a13n_harness.toolsets import CodeActPolicyToolset, CodeActToolPolicy
from harness_support import CALL, StreamScript, returns
from pydantic_ai import RunContext, Tool
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

CALLED: list[str] = []


def delete_account(account_id: int) -> str:
    """Delete an account (needs approval)."""
    CALLED.append('delete_account')
    return f'deleted {account_id}'


def ask_human(question: str) -> str:
    """Ask a human operator (answered outside the run)."""
    raise CallDeferred()


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLED.clear()


def admin_proxy() -> ToolProxyCapability[Any]:
    source = CodeActPolicyToolset(
        wrapped=FunctionToolset([Tool(delete_account, requires_approval=True), ask_human]),
        policy=CodeActToolPolicy(default=True),
    )
    return ToolProxyCapability(groups={'admin': ToolProxyGroup(source=source, description='Account administration')})


def delete_call() -> list[tuple[str, dict[str, Any]]]:
    return [(CALL, {'group': 'admin', 'tool': 'delete_account', 'arguments': {'account_id': 3}})]


async def run(script: StreamScript, *extra: Any) -> Any:
    agent = HarnessBuilder().build(
        AgentSpec(), output_type=str, model=script.model, capabilities=(admin_proxy(), *extra)
    )
    return await agent.run('x')


@pytest.mark.parametrize('approve', [True, False])
async def test_inline_approval_handler_approves_or_denies(approve: bool) -> None:
    async def handler(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        if approve:
            return requests.build_results(approve_all=True)
        return DeferredToolResults(approvals={c.tool_call_id: ToolDenied('not today') for c in requests.approvals})

    result = await run(StreamScript([delete_call(), 'done']), HandleDeferredToolCalls(handler=handler))
    assert result.status == 'completed'
    (part,) = returns(result.all_messages(), CALL)
    if approve:
        assert part.content == 'deleted 3' and CALLED == ['delete_account']
    else:
        assert part.outcome == 'failed' and 'not today' in part.model_response_str()
        assert CALLED == []


async def test_unresolved_approval_or_deferral_fails_the_proxy_call_and_the_run_is_not_suspended() -> None:
    script = StreamScript(
        [
            [
                *delete_call(),
                (CALL, {'group': 'admin', 'tool': 'ask_human', 'arguments': {'question': 'ok?'}}),
            ],
            'done',
        ]
    )
    result = await run(script)
    assert result.status == 'completed' and result.deferred is None
    parts = returns(result.all_messages(), CALL)
    assert len(parts) == 2
    for part in parts:
        assert part.outcome == 'failed'
        assert 'host interaction' in part.model_response_str() and 'directly' in part.model_response_str()
    assert CALLED == []


async def test_codeact_call_of_an_approval_gated_target_fails_in_code_and_never_runs() -> None:
    code = """
try:
    await call_proxy_tool(group="admin", tool="delete_account", arguments={"account_id": 3})
    out = "ran"
except Exception as e:
    out = str(e)
out
"""
    result = await run(StreamScript([[('run_code', {'code': code})], 'done']), CodeActCapability())
    (part,) = returns(result.all_messages(), 'run_code')
    assert result.status == 'completed'
    assert 'deferred host interaction' in str(part.content), part.content
    assert CALLED == []
