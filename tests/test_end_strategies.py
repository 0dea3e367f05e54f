"""No silent success over a failed proxied call, under every `end_strategy`.

One model response holds a `call_proxy_tool` envelope and the output tool `final_result` (`output_type=Answer`), in
either order. A direct tool that raises there makes Pydantic AI raise out of the run; one that retries (a timeout, an
MCP error) keeps the output from ending the run (Pydantic AI's retry-wins rule). Through the proxy, a failure the call
control writes itself (an uncertain outcome, an unresolved deferral) is sent as a retry of the envelope in that spot,
so the output waits until the model has read the failure (docs/reliability.md, "Failures beside a final result").
Answers a direct tool gives the same way (its own `ModelRetry` or `ToolFailed`, a denial) end the run exactly as
they do for a direct tool. Under `'early'` no function tool runs beside a successful output, proxied or not. In
`run_stream` the streamed output is final before the response's tool calls run, so nothing can hold it: the run
raises, as it does for a direct tool that raises there.

Every strategy Pydantic AI's `EndStrategy` offers is covered (read from the type, so a new one is covered too), with
real runs: function tools, inline approval handlers and real stdio MCP server processes (`examples/mcp_server.py`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic import BaseModel
from pydantic_ai import Agent, EndStrategy
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import AgentRunError, ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, RunContext, Tool, ToolDenied
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from support import CALL

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

pytestmark = pytest.mark.anyio

STRATEGIES: tuple[str, ...] = get_args(EndStrategy)
ORDERS = ('call-first', 'output-first')
SERVER = Path(__file__).resolve().parent.parent / 'examples' / 'mcp_server.py'
RUN_LIMIT_S = 60
RAN: list[str] = []


class Answer(BaseModel):
    ok: bool


def test_every_end_strategy_is_covered() -> None:
    assert set(STRATEGIES) >= {'early', 'exhaustive'} and len(STRATEGIES) >= 2


def _script(call: ToolCallPart, order: str, seen: list[list[ModelMessage]]) -> FunctionModel:
    """First response: the call and `final_result(ok=True)` in `order`; every later one: `final_result(ok=False)`.
    `seen` collects each request's messages, as the model received them."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        n = len(seen)
        if n == 1:
            claim = ToolCallPart('final_result', {'ok': True}, tool_call_id='claim')
            return ModelResponse(parts=[call, claim] if order == 'call-first' else [claim, call])
        return ModelResponse(parts=[ToolCallPart('final_result', {'ok': False}, tool_call_id=f'final_{n}')])

    return FunctionModel(model)


def _proxied(group: str, tool: str, arguments: dict[str, Any] | None = None) -> ToolCallPart:
    return ToolCallPart(CALL, {'group': group, 'tool': tool, 'arguments': arguments or {}}, tool_call_id='proxied')


async def _run(
    source: AbstractToolset[Any], call: ToolCallPart, strategy: str, order: str, *, proxied: bool, extra: Any = ()
) -> tuple[Answer | BaseException, list[list[ModelMessage]]]:
    """One run; its output (or the exception it raised) and the messages of each request."""
    seen: list[list[ModelMessage]] = []
    wiring: dict[str, Any] = (
        {'capabilities': [ToolProxyCapability(groups={'g': ToolProxyGroup(source=source, description='G')}), *extra]}
        if proxied
        else {'toolsets': [source], 'capabilities': list(extra)}
    )
    agent = Agent(_script(call, order, seen), output_type=Answer, end_strategy=strategy, **wiring)  # type: ignore[call-overload]
    try:
        result = await asyncio.wait_for(agent.run('go'), RUN_LIMIT_S)
    except Exception as e:
        return e, seen
    return result.output, seen


def _read_by_model(seen: list[list[ModelMessage]], call_id: str) -> ToolReturnPart | None:
    """The return of `call_id` in the second request, i.e. what the model read before answering again."""
    if len(seen) < 2:
        return None
    parts = [p for m in seen[1] if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    return next((p for p in parts if p.tool_call_id == call_id), None)


def _assert_held_until_read(
    output: Answer | BaseException, seen: list[list[ModelMessage]], strategy: str, words: str
) -> None:
    """The claim of success did not end the run; the model read the failure (`words` in it) and answered again.
    Under `'early'`, the call never ran and the claim ended the run, as for a direct tool."""
    if strategy == 'early':
        assert output == Answer(ok=True) and RAN == [] and len(seen) == 1
        return
    assert output == Answer(ok=False), output
    read = _read_by_model(seen, 'proxied')
    assert read is not None and read.outcome == 'retried'
    assert words in read.model_response_str(wrap_if_error=False), read.content
    claim = _read_by_model(seen, 'claim')
    assert claim is not None and 'not used as the final result' in str(claim.content)


# --- failures the call control writes itself: held until the model has read them


def raising() -> FunctionToolset[Any]:
    def charge(amount: int) -> str:
        """Charge a card."""
        RAN.append('charge')
        raise RuntimeError('card processor exploded')

    return FunctionToolset([charge])


def timing_out() -> FunctionToolset[Any]:
    async def charge(amount: int) -> str:
        """Charge a card; hangs."""
        RAN.append('charge')
        await asyncio.sleep(3600)
        return 'charged'

    return FunctionToolset([Tool(charge, timeout=0.2)])


def needing_approval() -> FunctionToolset[Any]:
    def charge(amount: int) -> str:
        """Charge a card (needs approval)."""
        RAN.append('charge')
        return 'charged'

    return FunctionToolset([Tool(charge, requires_approval=True)])


def deferring_after_work() -> FunctionToolset[Any]:
    def charge(amount: int) -> str:
        """Submit a charge job, answered outside the run."""
        RAN.append('charge')
        raise CallDeferred()

    return FunctionToolset([charge])


def approval_from_the_body() -> FunctionToolset[Any]:
    def charge(amount: int) -> str:
        """Charge a card; asks for approval half-way."""
        RAN.append('charge')
        raise ApprovalRequired()

    return FunctionToolset([charge])


PROXY_FAILURES: dict[str, tuple[Callable[[], FunctionToolset[Any]], str]] = {
    'target raises': (raising, 'failed unexpectedly (RuntimeError: card processor exploded)'),
    'target times out': (timing_out, 'did not complete (TimeoutError: Timed out after 0.2 seconds.)'),
    'unresolved approval (declared)': (needing_approval, 'so it did not run'),
    'CallDeferred from the body': (deferring_after_work, 'Its work may have started'),
    'ApprovalRequired from the body': (approval_from_the_body, 'Its work may have started'),
}


@pytest.mark.parametrize('order', ORDERS)
@pytest.mark.parametrize('strategy', STRATEGIES)
@pytest.mark.parametrize('kind', list(PROXY_FAILURES))
async def test_a_failure_the_proxy_writes_never_lets_the_claim_end_the_run(
    kind: str, strategy: str, order: str
) -> None:
    RAN.clear()
    make, words = PROXY_FAILURES[kind]
    output, seen = await _run(make(), _proxied('g', 'charge', {'amount': 5}), strategy, order, proxied=True)
    _assert_held_until_read(output, seen, strategy, words)


@pytest.mark.parametrize('strategy', STRATEGIES)
async def test_a_direct_tool_that_raises_there_raises_out_of_the_run(strategy: str) -> None:
    """The native behaviour the proxy is measured against: raise (or, under 'early', never run)."""
    RAN.clear()
    output, _ = await _run(
        raising(), ToolCallPart('charge', {'amount': 5}, tool_call_id='d'), strategy, 'call-first', proxied=False
    )
    if strategy == 'early':
        assert output == Answer(ok=True) and RAN == []
    else:
        assert isinstance(output, RuntimeError) and RAN == ['charge']


async def test_without_an_output_call_beside_it_the_failure_stays_a_failure() -> None:
    """Only a response that also calls an output tool turns the failure into a retry; otherwise it is the
    uncertain-outcome failure (`outcome='failed'`) and the run goes on."""
    RAN.clear()
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[_proxied('g', 'charge', {'amount': 5})])
        return ModelResponse(parts=[ToolCallPart('final_result', {'ok': False}, tool_call_id='final')])

    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=raising(), description='G')})
    result = await Agent(FunctionModel(model), output_type=Answer, capabilities=[proxy]).run('go')
    read = _read_by_model(seen, 'proxied')
    assert result.output == Answer(ok=False) and read is not None and read.outcome == 'failed'


# --- MCP servers (real stdio processes): transport failures and tool errors


def notes_server(**kwargs: Any) -> MCPToolset[Any]:
    return MCPToolset(StdioTransport(command=sys.executable, args=[str(SERVER)]), id='notes', **kwargs)


MCP_FAILURES: dict[str, tuple[dict[str, Any], str, dict[str, Any], str]] = {
    'server exits mid-call': ({}, 'crash_server', {}, 'did not complete'),
    'server never answers (read_timeout)': ({'read_timeout': 4.0}, 'never_answer', {}, 'did not complete'),
    "tool error, tool_error_behavior='error'": (
        {'tool_error_behavior': 'error'},
        'fail',
        {'message': 'database down'},
        'failed unexpectedly',
    ),
}


@pytest.mark.parametrize('order', ORDERS)
@pytest.mark.parametrize('strategy', STRATEGIES)
@pytest.mark.parametrize('kind', list(MCP_FAILURES))
async def test_an_mcp_failure_never_lets_the_claim_end_the_run(kind: str, strategy: str, order: str) -> None:
    RAN.clear()
    options, tool, arguments, words = MCP_FAILURES[kind]
    output, seen = await _run(notes_server(**options), _proxied('g', tool, arguments), strategy, order, proxied=True)
    _assert_held_until_read(output, seen, strategy, words)
    if strategy != 'early':
        read = _read_by_model(seen, 'proxied')
        assert read is not None and 'Its outcome is uncertain' in str(read.content)


# --- answers a direct tool gives the same way: the run ends as it does for the direct tool


def retrying() -> FunctionToolset[Any]:
    def charge(amount: int) -> str:
        """Charge a card."""
        RAN.append('charge')
        raise ModelRetry('amount must be in cents')

    return FunctionToolset([charge])


def failing() -> FunctionToolset[Any]:
    def charge(amount: int) -> str:
        """Charge a card."""
        RAN.append('charge')
        raise ToolFailed('card declined')

    return FunctionToolset([charge])


def _denier() -> HandleDeferredToolCalls[Any]:
    async def deny(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        return DeferredToolResults(approvals={c.tool_call_id: ToolDenied('not today') for c in requests.approvals})

    return HandleDeferredToolCalls(handler=deny)


NATIVE: dict[str, tuple[Callable[[], AbstractToolset[Any]], str, dict[str, Any], tuple[Any, ...]]] = {
    'target ModelRetry': (retrying, 'charge', {'amount': 5}, ()),
    'target ToolFailed': (failing, 'charge', {'amount': 5}, ()),
    'denied by the approval handler': (needing_approval, 'charge', {'amount': 5}, (_denier(),)),
    "MCP tool error, tool_error_behavior='retry'": (notes_server, 'fail', {'message': 'database down'}, ()),
    "MCP tool error, tool_error_behavior='failed'": (
        lambda: notes_server(tool_error_behavior='failed'),
        'fail',
        {'message': 'database down'},
        (),
    ),
}


def _shape(output: Answer | BaseException, seen: list[list[ModelMessage]]) -> tuple[Any, int]:
    return (type(output).__name__ if isinstance(output, BaseException) else output, len(seen))


@pytest.mark.parametrize('order', ORDERS)
@pytest.mark.parametrize('strategy', STRATEGIES)
@pytest.mark.parametrize('kind', list(NATIVE))
async def test_a_native_answer_ends_the_run_as_for_a_direct_tool(kind: str, strategy: str, order: str) -> None:
    make, tool, arguments, extra = NATIVE[kind]
    RAN.clear()
    direct_call = ToolCallPart(tool, arguments, tool_call_id='proxied')
    direct = _shape(*await _run(make(), direct_call, strategy, order, proxied=False, extra=extra))
    ran_direct = list(RAN)
    RAN.clear()
    proxied = _shape(*await _run(make(), _proxied('g', tool, arguments), strategy, order, proxied=True, extra=extra))
    assert proxied == direct
    # A declared approval beside a final result is skipped natively; the proxy asks the handler, which denies.
    assert ran_direct == RAN


# --- run_stream: the streamed output is final before the response's tool calls run


def _stream_script(call: ToolCallPart, order: str) -> FunctionModel:
    import json

    from pydantic_ai.models.function import DeltaToolCall

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        proxied = {0: DeltaToolCall(call.tool_name, json.dumps(call.args), tool_call_id=call.tool_call_id)}
        claim = {1: DeltaToolCall('final_result', json.dumps({'ok': True}), tool_call_id='claim')}
        for delta in (proxied, claim) if order == 'call-first' else (claim, proxied):
            yield delta

    return FunctionModel(stream_function=stream)


STREAMED: dict[str, tuple[Callable[[], FunctionToolset[Any]], type[BaseException], str]] = {
    'target raises': (raising, RuntimeError, 'card processor exploded'),
    'target times out': (timing_out, AgentRunError, 'did not complete'),
    'CallDeferred from the body': (deferring_after_work, AgentRunError, 'Its work may have started'),
}


@pytest.mark.parametrize('order', ORDERS)
@pytest.mark.parametrize('strategy', [s for s in STRATEGIES if s != 'early'])
@pytest.mark.parametrize('kind', list(STREAMED))
async def test_run_stream_raises_instead_of_returning_the_committed_output(
    kind: str, strategy: str, order: str
) -> None:
    """No retry can hold an output `run_stream` has already committed, so the run raises, as a direct tool's
    exception raises there: the target's own exception, else `AgentRunError` with the failure's text."""
    make, raised, words = STREAMED[kind]
    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=make(), description='G')})
    model = _stream_script(_proxied('g', 'charge', {'amount': 5}), order)
    agent = Agent(model, output_type=Answer, end_strategy=strategy, capabilities=[proxy])  # type: ignore[call-overload]
    with pytest.raises(raised, match=words):
        async with agent.run_stream('go') as streamed:
            await streamed.get_output()


@pytest.mark.parametrize('strategy', [s for s in STRATEGIES if s != 'early'])
async def test_run_stream_with_a_direct_tool_that_raises_raises_too(strategy: str) -> None:
    model = _stream_script(ToolCallPart('charge', {'amount': 5}, tool_call_id='d'), 'call-first')
    agent = Agent(model, output_type=Answer, end_strategy=strategy, toolsets=[raising()])  # type: ignore[call-overload]
    with pytest.raises(RuntimeError, match='card processor exploded'):
        async with agent.run_stream('go') as streamed:
            await streamed.get_output()
