"""Grouping in a real Agent run: registration, hiding, direct-call refusal, source kinds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability, Capability, CombinedCapability, PrefixTools, Toolset
from pydantic_ai.toolsets import CombinedToolset, FunctionToolset
from support import CALL, SEARCH, Script, last_return, page_of, returns
from tools_fixtures import CALLS, billing_toolset, crm_toolset, status

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup


def proxy(**groups: Any) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={name: ToolProxyGroup(source=s, description=f'{name} tools') for name, s in groups.items()}
    )


async def test_members_registered_hidden_and_called_through_the_envelope() -> None:
    script = Script(
        [
            [('status', {})],
            [(SEARCH, {'query': 'customer name', 'group': 'crm'})],
            [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            'finished',
        ]
    )
    agent = Agent(script.model, tools=[status], capabilities=[proxy(crm=crm_toolset(), billing=billing_toolset())])
    result = await agent.run('who is 42?')
    assert result.output == 'finished'
    # The model is offered the ungrouped tool and the two controls, never a member.
    assert sorted(script.offered(0)) == sorted(['status', SEARCH, CALL])
    for info in script.infos:
        assert not any('__' in t.name for t in info.function_tools)
    # Members stay registered in the ToolManager under canonical names.
    registered = last_return(result.all_messages(), 'status').content
    assert {'crm__customer_name', 'crm__update_customer_email', 'crm__explode', 'billing__list_invoices'} <= set(
        registered
    )
    page = page_of(last_return(result.all_messages(), SEARCH))
    assert page['tools'][0]['group'] == 'crm' and page['tools'][0]['tool'] == 'customer_name'
    assert last_return(result.all_messages(), CALL).content == 'Ada'
    # status + search + (envelope + target)
    assert result.usage.tool_calls == 4
    assert CALLS == ['status', 'customer_name']


async def test_member_metadata_and_toolset_id_unchanged() -> None:
    seen: dict[str, Any] = {}

    def inspect(ctx: RunContext[Any]) -> str:
        assert ctx.tool_manager is not None and ctx.tool_manager.tools is not None
        tool_def = ctx.tool_manager.tools['crm__explode'].tool_def
        seen['metadata'] = tool_def.metadata
        seen['toolset_id'] = tool_def.toolset_id
        return 'ok'

    script = Script([[('inspect', {})], 'done'])
    agent = Agent(script.model, tools=[inspect], capabilities=[proxy(crm=crm_toolset(id='crm-tools'))])
    await agent.run('x')
    assert seen == {'metadata': {'danger': True}, 'toolset_id': 'crm-tools'}


async def test_member_called_directly_gets_a_retry_and_never_runs() -> None:
    script = Script([[('crm__customer_name', {'customer_id': 42})], 'gave up'])
    agent = Agent(script.model, capabilities=[proxy(crm=crm_toolset())])
    result = await agent.run('x')
    part = last_return(result.all_messages(), 'crm__customer_name')
    assert part.outcome == 'retried'
    assert CALL in part.model_response_str(wrap_if_error=False) and '"group": "crm"' in part.model_response_str(
        wrap_if_error=False
    )
    assert CALLS == []


@dataclass
class PerRunCapability(AbstractCapability[Any]):
    """A third-party capability whose `for_run` returns a replacement with a run-specific toolset."""

    label_: str = 'base'
    runs: int = 0

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        PerRunCapability.runs += 1
        return PerRunCapability(label_=f'run{PerRunCapability.runs}')

    def get_toolset(self) -> FunctionToolset[Any]:
        label = self.label_

        def whoami() -> str:
            """Say which run-bound replacement answered."""
            return label

        return FunctionToolset([whoami])

    def get_instructions(self) -> str:
        return 'Capability-level instruction stays native.'


@pytest.mark.parametrize(
    'source',
    [
        pytest.param(lambda: CombinedToolset([crm_toolset(), billing_toolset()]), id='CombinedToolset'),
        pytest.param(lambda: Capability(toolsets=[crm_toolset(), billing_toolset()]), id='Capability'),
        pytest.param(
            lambda: CombinedCapability([Toolset(crm_toolset()), Toolset(billing_toolset())]), id='CombinedCapability'
        ),
    ],
)
async def test_native_composition_sources(source: Any) -> None:
    script = Script(
        [
            [(SEARCH, {'query': 'invoices'})],
            [(CALL, {'group': 'all', 'tool': 'list_invoices', 'arguments': {'customer_id': 7}})],
            'ok',
        ]
    )
    agent = Agent(script.model, capabilities=[proxy(all=source())])
    result = await agent.run('x')
    page = page_of(last_return(result.all_messages(), SEARCH))
    assert page['tools'][0]['tool'] == 'list_invoices'
    assert last_return(result.all_messages(), CALL).content == [{'id': 1, 'customer_id': 7, 'status': 'open'}]


async def test_capability_with_for_run_replacement_is_wrapped_not_extracted() -> None:
    PerRunCapability.runs = 0
    script = Script([[(CALL, {'group': 'me', 'tool': 'whoami', 'arguments': {}})], 'ok'] * 2)
    agent = Agent(script.model, capabilities=[proxy(me=PerRunCapability())])
    first = await agent.run('x')
    assert last_return(first.all_messages(), CALL).content == 'run1'
    script._n = 0
    second = await agent.run('x')
    assert last_return(second.all_messages(), CALL).content == 'run2'
    # Capability-level instructions of a grouped capability keep their native behaviour.
    assert 'Capability-level instruction stays native.' in (script.infos[0].instructions or '')


async def test_ungrouped_tools_stay_visible_and_native_tool_search_coexists() -> None:
    from pydantic_ai.capabilities import ToolSearch
    from pydantic_ai.tools import Tool

    def hidden_helper(x: int) -> int:
        """A deferred ungrouped tool, for native ToolSearch."""
        return x

    script = Script(['ok'])
    agent = Agent(
        script.model,
        tools=[status, Tool(hidden_helper, defer_loading=True)],
        capabilities=[proxy(crm=crm_toolset()), ToolSearch(strategy='keywords')],
    )
    await agent.run('x')
    offered = script.offered(0)
    assert 'status' in offered and SEARCH in offered and CALL in offered
    assert 'search_tools' in offered
    assert 'hidden_helper' not in offered


async def test_same_local_name_in_two_groups() -> None:
    script = Script(
        [
            [(CALL, {'group': 'a', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            [(CALL, {'group': 'b', 'tool': 'customer_name', 'arguments': {'customer_id': 1}})],
            'ok',
        ]
    )
    agent = Agent(script.model, capabilities=[proxy(a=crm_toolset(), b=crm_toolset())])
    result = await agent.run('x')
    assert [p.content for p in returns(result.all_messages()) if p.tool_name == CALL] == ['Ada', 'Unknown']


def test_group_is_a_frozen_value_not_a_capability() -> None:
    import dataclasses

    group = ToolProxyGroup(source=crm_toolset(), description='CRM')
    assert not isinstance(group, AbstractCapability)
    with pytest.raises(dataclasses.FrozenInstanceError):
        group.description = 'other'  # type: ignore[misc]


async def test_empty_groups_expose_no_controls() -> None:
    script = Script(['ok'])
    agent = Agent(script.model, tools=[status], capabilities=[ToolProxyCapability(groups={})])
    await agent.run('x')
    assert script.offered(0) == ['status']


@dataclass
class HideByName(Toolset[Any]):
    """A capability whose own `prepare_tools` hides the tools named `hidden`."""

    hidden: str = ''
    seen: list[list[str]] | None = None

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[Any]) -> list[Any]:
        if self.seen is not None:
            self.seen.append(sorted(t.name for t in tool_defs))
        return [t for t in tool_defs if t.name != self.hidden]


@pytest.mark.parametrize(
    ('hidden', 'found'),
    [
        pytest.param('crm__customer_name', False, id='canonical name: hidden'),
        pytest.param('customer_name', True, id='local name: matches nothing'),
    ],
)
async def test_a_grouped_capabilitys_own_hooks_see_canonical_names(hidden: str, found: bool) -> None:
    """docs/usage.md, "Hooks see canonical names": a grouped capability's `prepare_tools` sees its members as
    `group__tool`, so only a filter on that name hides one (from search and from the envelope)."""
    seen: list[list[str]] = []
    script = Script(
        [
            [(SEARCH, {'query': 'customer name', 'group': 'crm'})],
            [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            'finished',
        ]
    )
    agent = Agent(script.model, capabilities=[proxy(crm=HideByName(crm_toolset(), hidden=hidden, seen=seen))])
    result = await agent.run('who is 42?')
    assert 'crm__customer_name' in seen[0] and 'customer_name' not in seen[0]
    names = [(t['group'], t['tool']) for t in page_of(last_return(result.all_messages(), SEARCH))['tools']]
    assert (('crm', 'customer_name') in names) is found
    assert ('customer_name' in CALLS) is found


async def test_prefix_tools_shows_a_wrapped_capabilitys_hooks_the_renamed_tools_too() -> None:
    """The same rule in Pydantic AI's own renaming wrapper, which the docs cite: the wrapped hook sees the new name."""
    seen: list[list[str]] = []
    agent = Agent(
        Script(['finished']).model,
        capabilities=[PrefixTools(wrapped=HideByName(crm_toolset(), hidden='customer_name', seen=seen), prefix='ns')],
    )
    await agent.run('hi')
    assert 'ns_customer_name' in seen[0] and 'customer_name' not in seen[0]
