"""Prompt-cache stability, through Pydantic AI's `OpenAIChatModel` (the real `openai` SDK over HTTP) against the
recording server of bench/lib/recording_llm.py on loopback.

A provider's prefix cache reuses what a request shares with the start of an earlier one: tools, instructions,
messages. The proxy keeps all three stable across a run (search, call, a failed call, retries, a refused direct
call, an unknown tool name), across runs, and across capabilities built alike; the changes that alter `tools` or
the instructions are exactly the ones docs/performance.md lists (its table is read here and each row measured).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('openai', reason='needs the openai SDK (pydantic-ai-slim[openai])')

from pydantic_ai import Agent
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.toolsets import FunctionToolset

from bench.lib import prompt_cache
from bench.lib.prompt_cache import (
    GROUPS,
    customer_email,
    customer_name,
    get_forecast,
    openai_client,
    openai_model,
    proxy,
)
from bench.lib.recording_llm import RecordingServer, conversation_of, instructions_of, tools_of
from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

ROOT = Path(__file__).resolve().parents[1]

SEARCH, CALL = 'search_proxy_tools', 'call_proxy_tool'
DOC = ROOT / 'docs' / 'performance.md'

RUN = [
    (SEARCH, {'query': 'customer name'}),
    (CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}),
    (SEARCH, {'query': 'refund', 'group': 'billing'}),
    (CALL, {'group': 'billing', 'tool': 'refund_order', 'arguments': {'order_id': 'seven', 'amount': 10}}),
    (CALL, {'group': 'billing', 'tool': 'refund_order', 'arguments': {'order_id': 7, 'amount': 500}}),
    (CALL, {'group': 'billing', 'tool': 'refund_order', 'arguments': {'order_id': 7, 'amount': 50}}),
    ('crm__customer_email', {'customer_id': 42}),
    ('send_fax', {'to': 'x'}),
    (CALL, {'group': 'crm', 'tool': 'customer_email', 'arguments': {'customer_id': 42}}),
    'done',
]
"""Searches, calls, a call with invalid arguments, a call the tool refuses (`ModelRetry`), the retry that works, a
direct call of a grouped tool (refused), an unknown tool name, and a last call."""


def now() -> str:
    """The current time (an ungrouped tool, offered directly)."""
    return '12:00'


@pytest.fixture
async def server() -> AsyncIterator[RecordingServer]:
    """The recording server and one `openai` client of it (`server.client`), closed after the test."""
    with RecordingServer() as running:
        client = openai_client(running)
        running.client = client  # type: ignore[attr-defined]
        try:
            yield running
        finally:
            await client.close()


def agent_of(server: RecordingServer, capability: ToolProxyCapability[Any], **kwargs: Any) -> Agent[None, str]:
    model = openai_model(server.client)  # type: ignore[attr-defined]
    return Agent(model, capabilities=[capability], tools=[now], instructions='Be brief.', **kwargs)


async def test_a_multi_step_run_keeps_tools_and_instructions_and_extends_its_messages(server: RecordingServer) -> None:
    server.script = RUN
    result = await agent_of(server, proxy(), retries=3).run('Find customer 42 and refund order 7.')
    bodies = list(server.requests)
    assert len(bodies) == len(RUN)
    # The run did what the script says: the failures were retries, the retry succeeded.
    parts = [p for m in result.all_messages() for p in getattr(m, 'parts', ()) if isinstance(p, ToolReturnPart)]
    assert [(p.tool_name, p.outcome) for p in parts] == [
        (SEARCH, 'success'),
        (CALL, 'success'),
        (SEARCH, 'success'),
        (CALL, 'retried'),  # arguments that do not match the tool's schema
        (CALL, 'retried'),  # the tool's own ModelRetry
        (CALL, 'success'),  # the retry
        ('crm__customer_email', 'retried'),  # a grouped tool called directly
        ('send_fax', 'retried'),  # an unknown tool name
        (CALL, 'success'),
    ]
    assert 'needs approval' in parts[4].model_response_str()
    assert [t['function']['name'] for t in bodies[0]['tools']] == ['now', SEARCH, CALL]
    for i, body in enumerate(bodies[1:], 1):
        assert tools_of(body) == tools_of(bodies[0]), f'request {i} changed `tools`'
        assert instructions_of(body) == instructions_of(bodies[0]), f'request {i} changed the instructions'
        before, now_ = conversation_of(bodies[i - 1]), conversation_of(body)
        assert now_[: len(before)] == before, f'request {i} does not extend request {i - 1}'
        assert len(now_) > len(before)
    assert 'Be brief.' in instructions_of(bodies[0]) and SEARCH in instructions_of(bodies[0])
    assert prompt_cache.stability(bodies) == prompt_cache.Stability(len(RUN), len(RUN) - 1, len(RUN) - 1, len(RUN) - 1)


async def test_runs_and_capabilities_alike_send_the_same_tools_and_instructions(server: RecordingServer) -> None:
    capability = proxy()
    agent = agent_of(server, capability)
    await agent.run('one')
    await agent.run('two')
    await agent_of(server, capability).run('three')  # another agent, the same capability
    await agent_of(server, proxy()).run('four')  # a capability built alike over new toolsets
    bodies = list(server.requests)
    assert len(bodies) == 4
    assert len({tools_of(b) for b in bodies}) == 1
    assert len({instructions_of(b) for b in bodies}) == 1


def _groups(**changes: Any) -> dict[str, tuple[str, list[Any]]]:
    groups = {name: (desc, list(fns)) for name, (desc, fns) in GROUPS.items()}
    groups.update(changes)
    return groups


def _capability(groups: dict[str, tuple[str, list[Any]]], config: ToolProxyConfig | None = None) -> Any:
    built = {
        name: ToolProxyGroup(source=FunctionToolset(fns), description=desc) for name, (desc, fns) in groups.items()
    }
    return ToolProxyCapability(groups=built, config=config)


def renamed_customer_email(customer_id: int, domain: str = 'example.com') -> str:
    """Look up the email address of a customer by id, at a domain of the host's choice."""
    return customer_email(customer_id)


renamed_customer_email.__name__ = 'customer_email'


def appointments(day: str) -> list[str]:
    """The appointments of a day."""
    return []


CRM_DESCRIPTION = GROUPS['crm'][0]
CHANGES: dict[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
    'group-added': lambda: (_capability(_groups(calendar=('Appointments', [appointments]))), {}),
    'group-removed': lambda: (_capability({k: v for k, v in _groups().items() if k != 'weather'}), {}),
    'group-renamed': lambda: (
        _capability({('forecasts' if k == 'weather' else k): v for k, v in _groups().items()}),
        {},
    ),
    'groups-reordered': lambda: (_capability(dict(reversed(_groups().items()))), {}),
    'group-description-changed': lambda: (_capability(_groups(crm=('Customer records', GROUPS['crm'][1]))), {}),
    'group-description-whitespace': lambda: (
        _capability(_groups(crm=('  ' + CRM_DESCRIPTION.replace(' ', '\n  ') + '\n', GROUPS['crm'][1]))),
        {},
    ),
    'group-emptied': lambda: (_capability(_groups(weather=('Weather forecasts', []))), {}),
    'all-groups-emptied': lambda: (_capability({k: (desc, []) for k, (desc, _) in _groups().items()}), {}),
    'search-name-renamed': lambda: (_capability(_groups(), ToolProxyConfig(search_name='find_tools')), {}),
    'call-name-renamed': lambda: (_capability(_groups(), ToolProxyConfig(call_name='use_tool')), {}),
    'max-results-changed': lambda: (_capability(_groups(), ToolProxyConfig(max_results=20)), {}),
    'max-search-bytes-changed': lambda: (_capability(_groups(), ToolProxyConfig(max_search_bytes=8192)), {}),
    'include-instructions-off': lambda: (_capability(_groups(), ToolProxyConfig(include_instructions=False)), {}),
    'tool-added': lambda: (_capability(_groups(weather=('Weather forecasts', [get_forecast, appointments]))), {}),
    'tool-removed': lambda: (_capability(_groups(crm=(CRM_DESCRIPTION, [customer_name]))), {}),
    'tool-changed': lambda: (
        _capability(_groups(crm=(CRM_DESCRIPTION, [customer_name, renamed_customer_email, GROUPS['crm'][1][2]]))),
        {},
    ),
}
"""Each change the docs list, as the capability (and extra `Agent` arguments) that differs from `proxy()`."""


def documented_changes() -> dict[str, tuple[str, str]]:
    """`key -> (tools, instructions)` from the table of docs/performance.md ("changes" or "same")."""
    text = DOC.read_text()
    section = text[text.index('## Prompt-cache stability') :]
    rows = re.findall(r'^\| `([a-z-]+)` [^|]*\| (changes|same) \| (changes|same) \|$', section, re.M)
    return {key: (tools, instructions) for key, tools, instructions in rows}


def test_the_docs_list_every_change_measured_here() -> None:
    assert set(documented_changes()) == set(CHANGES)


@pytest.mark.parametrize('key', sorted(CHANGES))
async def test_what_changes_tools_and_instructions_is_what_the_docs_list(key: str, server: RecordingServer) -> None:
    capability, extra = CHANGES[key]()
    await agent_of(server, proxy()).run('x')
    await agent_of(server, capability, **extra).run('x')
    base, changed = server.requests
    measured = (
        'same' if tools_of(changed) == tools_of(base) else 'changes',
        'same' if instructions_of(changed) == instructions_of(base) else 'changes',
    )
    assert measured == documented_changes()[key]


async def test_the_comparison_with_tool_search_in_the_docs_is_what_the_script_measures() -> None:
    results = await prompt_cache.measure()
    expected = ['Ada Lovelace', 'refunded 50.0 euros on order 7', 'Paris: sunny for 2 days']
    assert [outputs for _, outputs in results.values()] == [expected, expected]  # both agents did every task
    proxied = results[prompt_cache.PROXY][0]
    assert proxied.same_tools == proxied.same_instructions == proxied.extends == proxied.requests - 1
    text = DOC.read_text()
    for line in prompt_cache.table(results)[2:]:
        assert line in text, f'docs/performance.md does not show the measured row {line!r}'
