"""Property test (hypothesis): random model output through real Agent runs never breaks the run or floods the context.

Each example is one `Agent` run whose scripted model sends 1-4 responses of 1-3 tool calls each, drawn from:
searches with any `query` (junk, huge, lone surrogates), `group` (valid, junk, 100 KB), `limit` and `offset` (far
outside the valid range, beyond 64 bits); envelopes with any `group`, `tool` (local, canonical, junk, huge) and
`arguments` (objects, JSON strings, deeply nested strings, lists, numbers); and direct calls of member canonical
names, member local names and junk names. The agent's retry budget is raised so that the run's end is decided by the
script, not by Pydantic AI's budget (which `test_model_surface` covers).

Asserted for every example:
- the run returns (no exception);
- every retry or failure text is within the bound (`MAX_MESSAGE_CHARS` characters);
- every page is within `max_search_bytes`, measured as the UTF-8 JSON the model receives;
- only members ran, each exactly when an envelope named its exact `(group, tool)` with valid arguments.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RequestUsage
from support import CALL, SEARCH, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy._messages import MAX_MESSAGE_CHARS

BUDGET = 2_048
TOOLS = {'crm': ['customer_name', 'update_email'], 'ops': ['restart', '_purge'], 'ops_': ['purge_all']}
RAN: list[tuple[str, str]] = []


def group_source(group: str) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset(instructions=f'Rules of {group}.')
    for tool in TOOLS[group]:

        def run(customer_id: int, note: str = '', _g: str = group, _t: str = tool) -> str:
            RAN.append((_g, _t))
            return f'{_g}/{_t}:{customer_id}'

        toolset.add_function(run, name=tool, description=f'{tool.replace("_", " ")} in {group}.')
    return toolset


def direct_tool() -> str:
    """An ungrouped tool."""
    RAN.append(('', 'direct_tool'))
    return 'ok'


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
JUNK_TEXT = st.one_of(
    st.text(max_size=30),
    st.text(st.one_of(st.characters(codec=None), SURROGATES), max_size=30),
    st.integers(1, 200_000).map(lambda n: 'x' * n),
    st.sampled_from(['customer name', 'purge', 'ops___purge', 'crm__customer_name', '', '   ', '%%%']),
)
HUGE_INT = st.one_of(st.integers(-5, 15), st.integers(-(2**70), 2**70))
GROUP = st.one_of(st.none(), st.sampled_from(list(TOOLS)), JUNK_TEXT, st.integers())
TOOL = st.one_of(
    st.sampled_from([t for ts in TOOLS.values() for t in ts] + ['_purge_all', 'ops___purge_all']), JUNK_TEXT, st.none()
)
ARGUMENTS = st.one_of(
    st.just({'customer_id': 7}),
    st.dictionaries(st.text(max_size=12), st.one_of(st.integers(), st.text(max_size=8), st.none()), max_size=3),
    st.just(json.dumps({'customer_id': 7})),
    st.integers(1, 6_000).map(lambda n: '[' * n + ']' * n),
    st.integers(1, 400).map(lambda n: '{"a": ' * n + '1' + '}' * n),
    st.lists(st.integers(), max_size=3),
    st.integers(),
    st.none(),
    JUNK_TEXT,
)
SEARCH_CALL = st.fixed_dictionaries(
    {}, optional={'query': JUNK_TEXT, 'group': GROUP, 'limit': st.one_of(st.none(), HUGE_INT), 'offset': HUGE_INT}
).map(lambda args: (SEARCH, args))
ENVELOPE = st.fixed_dictionaries(
    {'group': GROUP, 'tool': TOOL, 'arguments': ARGUMENTS}, optional={'extra': JUNK_TEXT}
).map(lambda args: (CALL, args))
DIRECT = st.one_of(
    st.sampled_from(
        ['crm__customer_name', 'ops___purge', 'ops___purge_all', 'customer_name', 'restart', 'direct_tool']
    ),
    JUNK_TEXT.filter(lambda name: bool(name) and name.isprintable()),
).map(lambda name: (name, {} if name == 'direct_tool' else {'customer_id': 1}))
RESPONSES = st.lists(st.lists(st.one_of(SEARCH_CALL, ENVELOPE, DIRECT), min_size=1, max_size=3), min_size=1, max_size=4)


def expected_runs(responses: list[list[tuple[str, dict[str, Any]]]]) -> list[tuple[str, str]]:
    """The member calls that must run: envelopes naming an exact `(group, tool)` with valid arguments, and the
    direct tool (calls in response order)."""
    expected: list[tuple[str, str]] = []
    for response in responses:
        for name, args in response:
            if name == 'direct_tool':
                expected.append(('', 'direct_tool'))
            if name != CALL or set(args) != {'group', 'tool', 'arguments'}:
                continue
            group, tool, arguments = args['group'], args['tool'], args['arguments']
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except (ValueError, RecursionError):
                    continue
            if group in TOOLS and tool in TOOLS[group] and arguments == {'customer_id': 7}:
                expected.append((group, tool))
    return expected


def scripted(responses: list[list[tuple[str, dict[str, Any]]]], seen: list[ModelMessage]) -> FunctionModel:
    """Plays `responses`, then 'done'; `seen` holds the messages of the latest request, as the model received them."""
    turns = iter(responses)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen[:] = messages
        response = next(turns, None)
        # Usage given, so FunctionModel does not estimate it by serializing the history: it cannot encode the lone
        # surrogates this model sends (no provider could), and that is not the proxy's to handle.
        usage = RequestUsage(input_tokens=1, output_tokens=1)
        if response is None:
            return ModelResponse(parts=[TextPart('done')], usage=usage)
        calls = [ToolCallPart(name, args, tool_call_id=f'c{id(args)}_{i}') for i, (name, args) in enumerate(response)]
        return ModelResponse(parts=list(calls), usage=usage)

    return FunctionModel(model)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(RESPONSES)
def test_random_model_output_never_breaks_the_run(responses: list[list[tuple[str, dict[str, Any]]]]) -> None:
    RAN.clear()
    capability = ToolProxyCapability(
        groups={g: ToolProxyGroup(source=group_source(g), description=f'The {g} tools') for g in TOOLS},
        config=ToolProxyConfig(max_search_bytes=BUDGET, max_results=10),
    )
    seen: list[ModelMessage] = []
    agent = Agent(scripted(responses, seen), tools=[direct_tool], capabilities=[capability], retries=100)
    result = asyncio.run(agent.run('go'))
    assert result.output == 'done'
    for part in returns(seen):  # what the model received (the run's history keeps Pydantic AI's own texts)
        text = part.model_response_str()
        if part.outcome != 'success':
            own = part.content if isinstance(part.content, str) else text
            assert len(own) <= MAX_MESSAGE_CHARS, (part.tool_name, len(own), own[:300])
        elif part.tool_name == SEARCH:
            page = json.loads(text)
            assert set(page) == {'tools', 'total', 'next_offset'}
            assert len(text.encode()) <= BUDGET, len(text.encode())
    assert expected_runs(responses) == RAN
