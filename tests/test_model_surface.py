"""The model cannot break a run: one regression test per defect class of the model-facing surface.

Each test drives a real `Agent` with a scripted `FunctionModel` and checks what the model receives: a page, or a
retry or failure whose text says what to do next and stays within `_messages.MAX_MESSAGE_CHARS`; never an
exception out of the run (except Pydantic AI's own `UsageLimitExceeded` / `UnexpectedModelBehavior`, where a run
without the proxy ends the same way).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import PrefixTools
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded, UserError
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import UsageLimits
from support import CALL, SEARCH, Script, last_return, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup, _core
from pydantic_ai_toolproxy._messages import MAX_MESSAGE_CHARS

pytestmark = pytest.mark.anyio

BOUND = MAX_MESSAGE_CHARS * 4  # UTF-8 bytes of a bounded message, at most
RAN: list[str] = []


def numbered(n: int, prefix: str = 'tool_number') -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset()
    for i in range(n):

        def run(x: int = 0, _i: int = i) -> str:
            RAN.append(f'{prefix}_{_i}')
            return f'{prefix}_{_i}:{x}'

        toolset.add_function(run, name=f'{prefix}_{i}', description=f'Numbered tool {i} of {prefix}.')
    return toolset


def proxy(n: int = 20, **config: Any) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=numbered(n), description='Numbered tools')},
        config=ToolProxyConfig(**config),
    )


def texts(messages: Any) -> list[str]:
    """What the model received for each tool return, as text (a retry's or failure's own text, unescaped)."""
    return [p.content if isinstance(p.content, str) else p.model_response_str() for p in returns(messages)]


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


# --- 1. model output never ends the run with an exception


@pytest.mark.parametrize('query, offset', [('numbered', 10_000), ('zzzz-no-hit', 1), ('', 10**30), ('numbered', 20)])
async def test_an_offset_past_total_returns_the_empty_page(query: str, offset: int) -> None:
    script = Script([[(SEARCH, {'query': query, 'offset': offset})]])
    result = await Agent(script.model, capabilities=[proxy()]).run('go')
    page = page_of(last_return(result.all_messages(), SEARCH))
    assert page['tools'] == [] and page['next_offset'] is None
    assert page['total'] == (0 if query == 'zzzz-no-hit' else 20)


async def test_a_stale_next_offset_after_the_tools_shrank_returns_the_empty_page() -> None:
    sizes = iter([20, 3])

    async def shrink(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return defs[: next(sizes, 3)]

    capability = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=numbered(20).prepared(shrink), description='Numbered tools')}
    )
    script = Script([[(SEARCH, {'query': 'numbered', 'limit': 5})], [(SEARCH, {'query': 'numbered', 'offset': 5})]])
    result = await Agent(script.model, capabilities=[capability]).run('go')
    first, second = [page_of(p) for p in returns(result.all_messages())]
    assert first['next_offset'] == 5 and second == {'tools': [], 'total': 3, 'next_offset': None}


async def test_arguments_nested_thousands_deep_get_a_retry() -> None:
    deep = '[' * 5_000 + ']' * 5_000
    script = Script(
        [
            [(CALL, {'group': 'g', 'tool': 'tool_number_1', 'arguments': deep})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_2', 'arguments': json.dumps({'x': '{' * 3})})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_3', 'arguments': '{"x": ' * 150 + '1' + '}' * 150})],
        ]
    )
    result = await Agent(script.model, capabilities=[proxy()]).run('go')
    assert result.output == 'done' and RAN == []
    said = texts(result.all_messages())
    assert len(said) == 3 and all(len(t.encode()) <= BOUND for t in said)
    assert 'not valid JSON' in said[0] and 'levels deep' in said[2]


# --- 2. tool_calls_limit counts every call of the response


async def test_tool_calls_limit_counts_the_calls_after_the_envelope() -> None:
    def direct() -> str:
        """An ungrouped tool."""
        RAN.append('direct')
        return 'ok'

    script = Script([[(CALL, {'group': 'g', 'tool': 'tool_number_1', 'arguments': {}}), ('direct', {})]])
    agent = Agent(script.model, tools=[direct], capabilities=[proxy()])
    with pytest.raises(UsageLimitExceeded):
        await agent.run('go', usage_limits=UsageLimits(tool_calls_limit=2))
    assert RAN == []  # neither the target nor the later direct call ran


async def test_tool_calls_limit_lets_a_batch_that_fits_run() -> None:
    def direct() -> str:
        """An ungrouped tool."""
        RAN.append('direct')
        return 'ok'

    script = Script([[(CALL, {'group': 'g', 'tool': 'tool_number_1', 'arguments': {}}), ('direct', {})]])
    agent = Agent(script.model, tools=[direct], capabilities=[proxy()])
    result = await agent.run('go', usage_limits=UsageLimits(tool_calls_limit=3))
    assert RAN == ['tool_number_1', 'direct'] and result.usage.tool_calls == 3


# --- 3. unknown tool names get a short retry, not the catalogue


@pytest.mark.slow
async def test_an_unknown_name_gets_a_short_retry_naming_the_envelope() -> None:
    script = Script([[('tool_number_4', {'x': 1}), ('tool_numbr_5', {}), ('no_such_thing', {})]])
    await Agent(script.model, capabilities=[proxy(10_000)]).run('go')
    said = texts(script.seen[-1])  # what the model received (the host's history keeps Pydantic AI's own text)
    assert all(len(t.encode()) <= BOUND for t in said), [len(t) for t in said]
    assert '"group": "g", "tool": "tool_number_4"' in said[0]
    assert '"tool": "tool_number_5"' in said[1]
    assert SEARCH in said[2] and 'tool_number_9999' not in said[2]
    assert RAN == []


async def test_a_rewritten_retry_stays_short_in_later_requests() -> None:
    sent: list[int] = []

    def measure(messages: Any, info: Any) -> str:
        # The whole history as this (third) request sends it: the first retry is still the short one.
        sent.extend(len(p.model_response_str()) for p in returns(messages))
        return 'done'

    script = Script([[('tool_number_4', {})], [(SEARCH, {'query': 'numbered', 'limit': 1})], measure])
    await Agent(script.model, capabilities=[proxy(2_000)]).run('go')
    assert len(sent) == 2 and sent[0] < 1_000


# --- 4. queries are bounded


async def test_a_query_over_the_cap_gets_a_retry() -> None:
    script = Script([[(SEARCH, {'query': 'word ' * 2_000})], [(SEARCH, {'query': 'numbered ' * 100})]])
    result = await Agent(script.model, capabilities=[proxy()]).run('go')
    refused, fine = returns(result.all_messages())
    assert refused.outcome == 'retried' and f'at most {_core.MAX_QUERY_BYTES} bytes' in refused.model_response_str()
    assert len(refused.model_response_str()) < 1_000
    assert page_of(fine)['total'] == 20


# --- 5. clashes between toolset-sourced groups fail preparation, naming both sides


async def test_canonical_name_clash_between_toolset_groups_is_a_user_error() -> None:
    ops, ops_ = FunctionToolset(), FunctionToolset()
    ops.add_function(lambda: 'a', name='_purge', description='Purge a.')
    ops_.add_function(lambda: 'b', name='purge', description='Purge b.')
    capability = ToolProxyCapability(
        groups={
            'ops': ToolProxyGroup(source=ops, description='Ops'),
            'ops_': ToolProxyGroup(source=ops_, description='Ops 2'),
        }
    )
    with pytest.raises(UserError) as raised:
        await Agent(Script(['x']).model, capabilities=[capability]).run('go')
    assert "'ops'" in str(raised.value) and "'ops_'" in str(raised.value) and 'ops___purge' in str(raised.value)


async def test_member_named_like_a_control_is_a_user_error() -> None:
    crm = FunctionToolset()
    crm.add_function(lambda: 'a', name='find', description='Find.')
    capability = ToolProxyCapability(
        groups={'crm': ToolProxyGroup(source=crm, description='CRM')}, config=ToolProxyConfig(search_name='crm__find')
    )
    with pytest.raises(UserError) as raised:
        await Agent(Script(['x']).model, capabilities=[capability]).run('go')
    assert 'crm__find' in str(raised.value) and 'controls' in str(raised.value)


# --- 6. host data that direct installation tolerates


class Unequal:
    """A value whose `==` raises, as a numpy array's truth value does."""

    def __eq__(self, other: object) -> bool:
        raise ValueError('The truth value of an array with more than one element is ambiguous.')

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return 'Unequal()'


@pytest.mark.parametrize('value', [Decimal('sNaN'), Unequal()], ids=['decimal-snan', 'raising-eq'])
async def test_a_schema_value_whose_comparison_raises_is_treated_as_changed(value: object) -> None:
    async def rebuild(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        # A fresh schema every step, holding a value whose `==` raises.
        return [
            ToolDefinition(
                name=d.name,
                description=d.description,
                parameters_json_schema={'type': 'object', 'properties': {'x': {'type': 'integer', 'default': value}}},
            )
            for d in defs
        ]

    capability = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=numbered(3).prepared(rebuild), description='Numbered')}
    )
    script = Script(
        [
            [(SEARCH, {'query': 'numbered'})],
            [(SEARCH, {'query': 'numbered 2'})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_2', 'arguments': {'x': 4}})],
        ]
    )
    result = await Agent(script.model, capabilities=[capability]).run('go')
    assert result.output == 'done' and RAN == ['tool_number_2']


class AttrDict(dict):  # type: ignore[type-arg]
    __getattr__ = dict.__getitem__


async def test_attribute_dict_deps_work() -> None:
    script = Script([[(SEARCH, {'query': 'numbered'})]])
    agent = Agent(script.model, deps_type=AttrDict, capabilities=[proxy()])
    result = await agent.run('go', deps=AttrDict(user='ada'))
    assert page_of(last_return(result.all_messages(), SEARCH))['total'] == 20


async def test_prefix_tools_around_the_proxy_fails_at_preparation() -> None:
    agent = Agent(Script(['x']).model, capabilities=[PrefixTools(wrapped=proxy(), prefix='ns')])
    with pytest.raises(UserError, match='PrefixTools'):
        await agent.run('go')


# --- 7. envelope refusals are charged to the target they name


async def test_two_typos_in_two_tool_names_do_not_end_the_run() -> None:
    script = Script(
        [
            [(CALL, {'group': 'g', 'tool': 'tool_nmber_1', 'arguments': {}})],
            [(CALL, {'group': 'g', 'tool': 'tool_nmber_2', 'arguments': {}})],
            [(CALL, {'group': 'gg', 'tool': 'tool_number_3', 'arguments': {}})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_3', 'arguments': [1]})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_3', 'arguments': {}})],
        ]
    )
    result = await Agent(script.model, capabilities=[proxy()]).run('go')
    assert result.output == 'done' and RAN == ['tool_number_3']
    assert [p.outcome for p in returns(result.all_messages())] == ['retried'] * 4 + ['success']


async def test_the_same_mistake_twice_ends_the_run_as_without_the_proxy() -> None:
    script = Script([[(CALL, {'group': 'g', 'tool': 'tool_nmber_1', 'arguments': {}})]] * 3)
    with pytest.raises(UnexpectedModelBehavior, match='exceeded max retries'):
        await Agent(script.model, capabilities=[proxy()]).run('go')


async def test_testmodel_needs_call_tools_set_to_the_search_control() -> None:
    """Pydantic AI's `TestModel` calls every offered tool with generated arguments and repeats a refused call: an
    envelope naming a tool `'a'` that no group has is refused twice, which ends the run as the same mistake against
    a directly installed tool would. `TestModel(call_tools=['search_proxy_tools'])` (the testing section of the
    docs) runs a search and completes."""
    with pytest.raises(UnexpectedModelBehavior, match="'g__a'"):
        await Agent(TestModel(), capabilities=[proxy()]).run('go')
    result = await Agent(TestModel(call_tools=[SEARCH]), capabilities=[proxy()]).run('go')
    assert [p.outcome for p in returns(result.all_messages())] == ['success']
    assert result.output


# --- 8. message hygiene


async def test_model_values_are_not_echoed_whole() -> None:
    huge = 'x' * 100_000
    script = Script(
        [
            [(SEARCH, {'query': 'numbered', 'group': huge})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_1', 'arguments': {huge: 1}})],
            [(CALL, {'group': 'g', 'tool': 'tool_number_1', 'arguments': {}, huge: 1})],
            [(CALL, {'group': huge, 'tool': huge, 'arguments': {}})],
            [(CALL, {'group': 'g', 'tool': huge, 'arguments': {}})],
        ]
    )
    strict = FunctionToolset()

    def tool_number_1(x: int = 0) -> str:
        return 'ran'

    strict.add_function(tool_number_1, description='Strict.')
    capability = ToolProxyCapability(groups={'g': ToolProxyGroup(source=strict, description='Strict')})
    result = await Agent(script.model, capabilities=[capability], retries=10).run('go')
    said = texts(result.all_messages())
    assert len(said) == 5
    assert all(len(t.encode()) <= BOUND for t in said), [len(t) for t in said]


async def test_close_names_come_from_the_named_group_only() -> None:
    ops, ops_ = FunctionToolset(), FunctionToolset()
    ops.add_function(lambda: 'a', name='restart', description='Restart.')
    ops_.add_function(lambda: 'b', name='_purge_all', description='Purge.')
    capability = ToolProxyCapability(
        groups={
            'ops': ToolProxyGroup(source=ops, description='Ops'),
            'ops_': ToolProxyGroup(source=ops_, description='Ops 2'),
        }
    )
    script = Script([[(CALL, {'group': 'ops', 'tool': '_purge_al', 'arguments': {}})]])
    result = await Agent(script.model, capabilities=[capability]).run('go')
    said = texts(result.all_messages())[0]
    assert 'has no tool' in said and '_purge_all' not in said and 'purge_all' not in said


async def test_instructions_that_no_page_can_hold_are_named_as_the_cause() -> None:
    chatty = FunctionToolset(instructions='Read this first. ' * 2_000)
    chatty.add_function(lambda: 'a', name='small_tool', description='A small tool.')
    capability = ToolProxyCapability(groups={'docs': ToolProxyGroup(source=chatty, description='Docs')})
    script = Script([[(SEARCH, {'query': 'small'})]])
    result = await Agent(script.model, capabilities=[capability]).run('go')
    part = last_return(result.all_messages(), SEARCH)
    text = part.model_response_str()
    assert part.outcome == 'failed' and 'source instructions of group' in text and 'simplify its schema' not in text


async def test_a_returned_page_does_not_change_when_the_host_edits_a_schema() -> None:
    schema: dict[str, Any] = {'type': 'object', 'properties': {'x': {'type': 'integer'}}}
    toolset = FunctionToolset()
    toolset.add_function(lambda x=0: x, name='edit_me', description='A tool whose schema the host edits.')

    async def same_schema(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [ToolDefinition(name=d.name, description=d.description, parameters_json_schema=schema) for d in defs]

    capability = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=toolset.prepared(same_schema), description='G')}
    )

    def edit(messages: Any, info: Any) -> str:
        schema['properties']['x']['description'] = 'y' * 10_000  # in place, after the page was returned
        return 'done'

    script = Script([[(SEARCH, {'query': 'edit'})], edit])
    result = await Agent(script.model, capabilities=[capability]).run('go')
    part: ToolReturnPart = last_return(result.all_messages(), SEARCH)
    assert 'yyyy' not in part.model_response_str()


# --- found by a hostile-model review


@pytest.mark.parametrize(
    'args',
    [
        {'query': 'x', 'extra': 'b' * 100_000},
        '{"query": "' + 'b' * 100_000,
        {'query': {'k': 'b' * 100_000}},
        {'query': 'x', 'limit': 'b' * 100_000},
    ],
    ids=['extra-key', 'invalid-json', 'wrong-type', 'bad-limit'],
)
async def test_invalid_search_arguments_get_a_short_retry(args: Any) -> None:
    result = await Agent(Script([[(SEARCH, args)]]).model, capabilities=[proxy()]).run('go')
    [said] = texts(result.all_messages())
    assert len(said) <= MAX_MESSAGE_CHARS and 'Expected arguments' in said


async def test_prefix_tools_around_a_combined_capability_fails_at_preparation() -> None:
    from pydantic_ai.capabilities import CombinedCapability

    agent = Agent(Script(['x']).model, capabilities=[PrefixTools(wrapped=CombinedCapability([proxy()]), prefix='ns')])
    with pytest.raises(UserError, match='PrefixTools'):
        await agent.run('go')


async def test_the_proxy_toolset_installed_again_prefixed_fails_at_preparation() -> None:
    capability = proxy()
    toolset = capability.get_toolset()
    assert toolset is not None
    agent = Agent(Script(['x']).model, capabilities=[capability], toolsets=[toolset.prefixed('ns')])  # type: ignore[union-attr]
    with pytest.raises(UserError, match='re-owns its tools'):
        await agent.run('go')


async def test_unknown_tool_retries_in_a_continued_history_are_shortened() -> None:
    from pydantic_ai import capture_run_messages

    capability = proxy(2_000)
    with capture_run_messages() as messages, pytest.raises(UsageLimitExceeded):
        await Agent(Script([[('tool_number_1', {})]]).model, capabilities=[capability]).run(
            'go', usage_limits=UsageLimits(request_limit=1)
        )
    seen: list[str] = []

    def read(history: Any, info: Any) -> str:
        seen.extend(p.model_response_str() for p in returns(history))
        return 'ok'

    await Agent(Script([read]).model, capabilities=[capability]).run('continue', message_history=messages)
    assert seen and all(len(text) < 1_000 for text in seen), [len(t) for t in seen]


async def test_instructions_that_cannot_be_json_are_named_as_the_cause() -> None:
    from dataclasses import dataclass

    from pydantic_ai.toolsets import WrapperToolset

    @dataclass
    class BadInstructions(WrapperToolset[Any]):
        async def get_instructions(self, ctx: Any) -> str:
            return 'bad \ud800 text'

    capability = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=BadInstructions(wrapped=numbered(3)), description='Numbered')}
    )
    result = await Agent(Script([[(SEARCH, {'query': 'numbered'})]]).model, capabilities=[capability]).run('go')
    [said] = texts(result.all_messages())
    assert 'source instructions of group' in said and 'offset=' not in said


async def test_a_refused_envelope_does_not_share_a_budget_with_a_direct_tool_of_that_name() -> None:
    def g__thing(x: int) -> str:
        """A direct tool whose name an envelope could spell."""
        return 'ok'

    script = Script([[('g__thing', {'x': 'not a number'})], [(CALL, {'group': 'g', 'tool': 'thing', 'arguments': {}})]])
    result = await Agent(script.model, tools=[g__thing], capabilities=[proxy()]).run('go')
    assert result.output == 'done'


# --- found by the hostile pass after the restructuring


async def test_validation_retries_and_the_direct_call_guard_stay_bounded_for_long_host_names() -> None:
    long_name = 'lookup_' + 'x' * 1990
    toolset: FunctionToolset[Any] = FunctionToolset(max_retries=3)  # both refusals count against this tool

    def lookup(customer_id: int) -> str:
        """Look up a customer."""
        return 'ok'

    toolset.add_function(lookup, name=long_name)
    capability = ToolProxyCapability(groups={'g': ToolProxyGroup(source=toolset, description='Long names')})
    script = Script(
        [
            [(CALL, {'group': 'g', 'tool': long_name, 'arguments': {'customer_id': 'many'}})],
            [(f'g__{long_name}', {'customer_id': 1})],
        ]
    )
    result = await Agent(script.model, capabilities=[capability]).run('go')
    said = texts(result.all_messages())
    assert len(said) == 2 and all(len(t) <= MAX_MESSAGE_CHARS for t in said), [len(t) for t in said]
    assert said[0].startswith('`arguments` do not match') and 'cannot be called directly' in said[1]


def test_a_group_description_with_a_lone_surrogate_fails_construction_naming_the_group() -> None:
    with pytest.raises(ValueError, match=r"group 'crm'.*lone surrogate"):
        ToolProxyCapability(groups={'crm': ToolProxyGroup(source=numbered(1), description='Customer \udcff records')})
