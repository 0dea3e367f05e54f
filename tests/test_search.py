"""The search control in real Agent runs: ranking, browsing, limits, byte-budgeted pages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, last_return, page_of, returns
from tools_fixtures import billing_toolset, crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup


def make_tool(name: str, description: str, n_params: int = 1, pad: int = 0) -> Tool[Any]:
    def fn(**kwargs: Any) -> str:
        return name

    schema = {
        'type': 'object',
        'properties': {f'p{i}': {'type': 'string', 'description': 'x' * pad} for i in range(n_params)},
    }
    return Tool.from_schema(fn, name=name, description=description, json_schema=schema)


def big_toolset(n: int, pad: int = 0, prefix: str = 'tool') -> FunctionToolset[Any]:
    return FunctionToolset(
        [make_tool(f'{prefix}_{i:03d}', f'Operation number {i} on widgets', pad=pad) for i in range(n)]
    )


async def search_pages(agent_caps: list[Any], queries: list[dict[str, Any]]) -> list[ToolReturnPart]:
    script = Script([[(SEARCH, q)] for q in queries] + ['done'])
    agent = Agent(script.model, capabilities=agent_caps)
    result = await agent.run('x')
    return [p for p in returns(result.all_messages()) if p.tool_name == SEARCH]


def proxy(config: ToolProxyConfig | None = None, **groups: Any) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={n: ToolProxyGroup(source=s, description=f'{n} operations') for n, s in groups.items()}, config=config
    )


async def test_entry_shape_and_source_instructions() -> None:
    (part,) = await search_pages([proxy(crm=crm_toolset())], [{'query': 'customer name', 'group': 'crm'}])
    page = page_of(part)
    assert list(page) == ['tools', 'total', 'next_offset']
    entry = page['tools'][0]
    assert list(entry) == [
        'group',
        'tool',
        'description',
        'parameters_json_schema',
        'return_schema',
        'instructions',
        'codeact_eligible',
    ]
    assert entry['group'] == 'crm' and entry['tool'] == 'customer_name'
    assert entry['description'] == 'Look up the display name for a customer ID.'
    assert entry['parameters_json_schema']['properties']['customer_id']['type'] == 'integer'
    assert entry['instructions'] == ['Use numeric customer IDs, not display names.']
    assert entry['codeact_eligible'] is False


async def test_exact_name_ranks_first_and_keywords_match_fields() -> None:
    parts = await search_pages(
        [proxy(crm=crm_toolset(), billing=billing_toolset())],
        [
            {'query': 'refund_invoice'},
            {'query': 'REFUND_INVOICE'},
            {'query': 'billing__refund_invoice'},
            {'query': 'email'},
            {'query': 'billing'},
        ],
    )
    pages = [page_of(p) for p in parts]
    for page in pages[:3]:
        assert page['tools'][0]['tool'] == 'refund_invoice'
    assert pages[3]['tools'][0]['tool'] == 'update_customer_email'
    assert {t['group'] for t in pages[4]['tools']} == {'billing'}


async def test_empty_query_browses_deterministically_and_unmatched_is_empty() -> None:
    caps = [proxy(crm=crm_toolset(), billing=billing_toolset())]
    parts = await search_pages(caps, [{'query': ''}, {'query': '', 'group': 'crm'}, {'query': 'zebra quantum'}])
    browse, browse_crm, nothing = (page_of(p) for p in parts)
    assert browse['total'] == 5 and browse_crm['total'] == 3
    assert [t['tool'] for t in browse_crm['tools']] == sorted(t['tool'] for t in browse_crm['tools'])
    assert nothing == {'tools': [], 'total': 0, 'next_offset': None}


async def test_same_directory_and_query_give_byte_identical_pages() -> None:
    texts = []
    for _ in range(2):
        parts = await search_pages([proxy(w=big_toolset(40))], [{'query': 'widgets operation'}])
        texts.append(parts[0].model_response_str(wrap_if_error=False))
    assert texts[0] == texts[1]


async def test_limit_defaults_and_bounds() -> None:
    caps = [proxy(config=ToolProxyConfig(max_results=3), w=big_toolset(20))]
    script = Script(
        [
            [(SEARCH, {'query': 'widgets'})],
            [(SEARCH, {'query': 'widgets', 'limit': 4})],
            [(SEARCH, {'query': 'x', 'offset': -1})],
            'done',
        ]
    )
    agent = Agent(script.model, capabilities=caps, retries=3)
    result = await agent.run('x')
    parts = [p for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert len(page_of(parts[0])['tools']) == 3  # min(5, max_results)
    assert parts[1].outcome == 'retried' and 'between 1 and 3' in parts[1].model_response_str(wrap_if_error=False)
    assert parts[2].outcome == 'retried' and 'offset' in parts[2].model_response_str(wrap_if_error=False)


async def test_unknown_group_gets_retry_listing_groups() -> None:
    script = Script([[(SEARCH, {'query': 'x', 'group': 'nope'})], 'done'])
    agent = Agent(script.model, capabilities=[proxy(crm=crm_toolset(), billing=billing_toolset())])
    result = await agent.run('x')
    part = last_return(result.all_messages(), SEARCH)
    assert part.outcome == 'retried'
    assert 'crm, billing' in part.model_response_str(wrap_if_error=False)


@pytest.mark.parametrize('budget', [1024, 2000, 4096])
async def test_pages_cover_the_ranking_exactly_once_within_budget(budget: int) -> None:
    caps = [proxy(config=ToolProxyConfig(max_search_bytes=budget, max_results=10), w=big_toolset(37, pad=60))]

    def next_query(messages: Any, info: Any) -> Any:
        parts = [p for p in returns(messages) if p.tool_name == SEARCH]
        if not parts:
            return [(SEARCH, {'query': 'widgets', 'limit': 10})]
        page = page_of(parts[-1])
        if page['next_offset'] is None:
            return 'done'
        return [(SEARCH, {'query': 'widgets', 'limit': 10, 'offset': page['next_offset']})]

    script = Script([next_query] * 100)
    agent = Agent(script.model, capabilities=caps)
    result = await agent.run('x')
    parts = [p for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    seen: list[str] = []
    for part in parts:
        text = part.model_response_str(wrap_if_error=False)
        assert len(text.encode()) <= budget
        page = json.loads(text)
        assert page['tools'], 'every page holds at least one complete entry'
        seen.extend(t['tool'] for t in page['tools'])
    assert len(seen) == len(set(seen)) == 37
    assert page_of(parts[0])['total'] == 37


async def test_entry_that_cannot_fit_alone_fails_naming_tool_size_and_budget() -> None:
    caps = [
        proxy(
            config=ToolProxyConfig(max_search_bytes=1024),
            w=FunctionToolset([make_tool('huge_tool', 'Huge', n_params=3, pad=500)]),
        )
    ]
    (part,) = await search_pages(caps, [{'query': 'huge'}])
    text = part.model_response_str(wrap_if_error=False)
    assert part.outcome == 'failed'
    assert "'huge_tool'" in text and "'w'" in text and '1024 bytes' in text
