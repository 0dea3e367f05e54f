"""Every retry a model receives stays within `MAX_MESSAGE_CHARS`, whatever tool name it called.

The proxy recognises Pydantic AI's unknown-tool retries by what Pydantic AI recorded on them (`cause='unknown_tool'`)
and its own rewritten copies by their identity, never by text, so a model that names a tool with the words of the
proxy's own retry (`It is not a tool you can call directly`), or with any other text, still gets the short retry:
never Pydantic AI's list of every registered tool (11,407 characters at 300 members), in this request or any later
one. A hypothesis property drives real runs over hostile names at 300 members.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RequestUsage
from support import CALL, SEARCH

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy._messages import MAX_MESSAGE_CHARS

MEMBERS = 300


def _proxy() -> ToolProxyCapability[Any]:
    groups: dict[str, ToolProxyGroup[Any]] = {}
    for g in range(3):
        source: FunctionToolset[Any] = FunctionToolset()
        for i in range(MEMBERS // 3):

            def tool(x: int = 0, _i: int = i) -> str:
                return str(_i)

            source.add_function(tool, name=f'op_{g}_{i}', description=f'Operation {i} of group {g}.')
        groups[f'grp{g}'] = ToolProxyGroup(source=source, description=f'Group {g}')
    return ToolProxyCapability(groups=groups)


PROXY = _proxy()
"""One proxy for every example (its index is built once); each example is a fresh run."""

RETRY_WORDS = [
    'It is not a tool you can call directly',
    'It is not a tool you can call directly: it is a grouped tool',
    'Unknown tool name',
    "Unknown tool name: 'op_0_1'. It is not a tool you can call directly.",
    'Available tools',
    'Find grouped tools with `search_proxy_tools`',
    'cannot be called directly',
    'Direct tools with close names',
    'Grouped tools that match it',
    '`call_proxy_tool` with {"group": "grp0", "tool": "op_0_1", "arguments": {...}}',
]
NAMES = st.one_of(
    st.sampled_from(RETRY_WORDS),
    st.builds(lambda a, b: a + b, st.sampled_from(RETRY_WORDS), st.text(max_size=20)),
    st.sampled_from(['op_0_1', 'grp0__op_0_1', 'grp1__op_1_99', 'grp9__op_0_1', 'op_0_1 ', 'OP_0_1', 'final_result']),
    st.sampled_from([SEARCH, CALL, f'{CALL}_', f' {SEARCH}', '__', 'grp0__', '__op_0_1', '', ' ']),
    st.text(max_size=40),
    st.integers(1, 20_000).map(lambda n: 'It is not a tool you can call directly ' * (n // 40 + 1)),
)
ARGS = st.one_of(st.just({}), st.just({'x': 1}), st.dictionaries(st.text(max_size=8), st.integers(), max_size=2))


def _model(calls: list[tuple[str, dict[str, Any]]], seen: list[list[ModelMessage]]) -> FunctionModel:
    """One response per call, then 'done'; `seen` holds every request's messages as the model received them."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        usage = RequestUsage(input_tokens=1, output_tokens=1)  # no estimate: it would serialize lone surrogates
        n = len(seen)
        if n > len(calls):
            return ModelResponse(parts=[TextPart('done')], usage=usage)
        name, args = calls[n - 1]
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'c{n}')], usage=usage)

    return FunctionModel(model)


def _retries_received(seen: list[list[ModelMessage]]) -> list[tuple[str, int]]:
    return [
        (p.tool_name, len(p.model_response_str(wrap_if_error=False)))
        for request in seen
        for m in request
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.outcome != 'success'
    ]


def _run(calls: list[tuple[str, dict[str, Any]]]) -> list[list[ModelMessage]]:
    seen: list[list[ModelMessage]] = []
    agent = Agent(_model(calls, seen), capabilities=[PROXY], retries=50)
    asyncio.run(agent.run('go'))
    return seen


def test_the_proxys_own_retry_words_as_a_tool_name_get_the_short_retry() -> None:
    seen = _run([('It is not a tool you can call directly', {}), ('op_0_1', {})])
    received = _retries_received(seen)
    assert len(received) == 1 + 2  # the first retry in requests 2 and 3, the second in request 3
    assert all(size <= MAX_MESSAGE_CHARS for _, size in received), received


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.tuples(NAMES, ARGS), min_size=1, max_size=3))
def test_every_retry_stays_bounded_whatever_the_called_name(calls: list[tuple[str, dict[str, Any]]]) -> None:
    seen = _run(calls)
    for name, size in _retries_received(seen):
        assert size <= MAX_MESSAGE_CHARS, (name[:80], size)
