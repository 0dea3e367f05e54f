"""Prompt-cache stability: how many requests of a run keep the previous request's `tools`, instructions and messages.

`python -m bench.cache_stability` prints the table (a few seconds; no network beyond loopback).

A provider's prefix cache (OpenAI's automatic prompt caching, Anthropic's cache breakpoints) reuses the part of a
request that equals the start of an earlier one: tools, then instructions, then messages. The same tasks run on
Pydantic AI's `OpenAIChatModel` (the real `openai` SDK over HTTP) against the recording server of
`bench/lib/recording_llm.py`, in two agents over the same tools:

- **ToolProxy**: the tools in groups of a `ToolProxyCapability`; a task is a `search_proxy_tools` step, then a
  `call_proxy_tool` step;
- **Pydantic AI `ToolSearch`**: the same tools with `defer_loading=True` and `capabilities=[ToolSearch()]`, which on
  Chat Completions is its local fallback (the `search_tools` tool); a task is a `search_tools` step, then a step
  calling the discovered tool.

For each request after the first it counts whether the `tools` array and the instructions are byte-identical to
the previous request's, and whether the messages extend the previous request's messages. `tests/test_prompt_cache.py`
runs `measure` and checks the figures docs/performance.md shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.toolsets import FunctionToolset

from bench.lib.recording_llm import RecordingServer, Turn, conversation_of, instructions_of, tools_of
from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

__all__ = (
    'PROXY',
    'ROWS',
    'TOOL_SEARCH',
    'Stability',
    'measure',
    'openai_client',
    'openai_model',
    'proxy',
    'stability',
    'toolsets',
)

PROXY = 'ToolProxy'
TOOL_SEARCH = 'Pydantic AI ToolSearch (local fallback)'
ROWS = (PROXY, TOOL_SEARCH)


def customer_name(customer_id: int) -> str:
    """Look up the full name of a customer by id."""
    return {42: 'Ada Lovelace'}.get(customer_id, 'unknown')


def customer_email(customer_id: int) -> str:
    """Look up the email address of a customer by id."""
    return f'customer{customer_id}@example.com'


def update_customer_email(customer_id: int, email: str) -> str:
    """Change the email address of a customer."""
    return f'customer {customer_id} now has {email}'


def refund_order(order_id: int, amount: float) -> str:
    """Refund part or all of an order, in euros (at most 100 without approval)."""
    if amount > 100:
        raise ModelRetry(f'a refund of {amount} euros needs approval; refund at most 100')
    return f'refunded {amount} euros on order {order_id}'


def invoice_total(invoice_id: int) -> float:
    """The total of an invoice, in euros."""
    return 120.5


def get_forecast(city: str, days: int = 1) -> str:
    """Weather forecast for a city over the next days."""
    return f'{city}: sunny for {days} days'


GROUPS: dict[str, tuple[str, list[Any]]] = {
    'crm': ('Customer records: names, email addresses', [customer_name, customer_email, update_customer_email]),
    'billing': ('Orders, refunds and invoices', [refund_order, invoice_total]),
    'weather': ('Weather forecasts', [get_forecast]),
}

TASKS: list[tuple[str, str, dict[str, Any]]] = [
    ('crm', 'customer_name', {'customer_id': 42}),
    ('billing', 'refund_order', {'order_id': 7, 'amount': 50}),
    ('weather', 'get_forecast', {'city': 'Paris', 'days': 2}),
]
"""The tasks both agents do: `(group, tool, arguments)`, one search and one call each, in this order."""


def toolsets(*, defer_loading: bool = False) -> dict[str, FunctionToolset[Any]]:
    """A fresh `FunctionToolset` per group of `GROUPS` (deferred for `ToolSearch`)."""
    out: dict[str, FunctionToolset[Any]] = {}
    for name, (_, functions) in GROUPS.items():
        toolset: FunctionToolset[Any] = FunctionToolset()
        for function in functions:
            toolset.add_function(function, defer_loading=defer_loading)
        out[name] = toolset
    return out


def proxy(config: ToolProxyConfig | None = None) -> ToolProxyCapability[Any]:
    """A `ToolProxyCapability` over fresh toolsets of `GROUPS`."""
    groups = {name: ToolProxyGroup(source=ts, description=GROUPS[name][0]) for name, ts in toolsets().items()}
    return ToolProxyCapability(groups=groups, config=config)


def openai_client(server: RecordingServer) -> Any:
    """An `openai.AsyncOpenAI` client of `server`, without retries (`await client.close()` closes its connections)."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=server.base_url, api_key='loopback', max_retries=0, timeout=120)


def openai_model(client: Any) -> Any:
    """`OpenAIChatModel` (Chat Completions, the real `openai` SDK) on `client` (`openai_client`)."""
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel('loopback', provider=OpenAIProvider(openai_client=client))


@dataclass(frozen=True)
class Stability:
    """What the requests of one run kept from the request before them.

    Attributes:
        requests: Requests in the run.
        same_tools: Requests (after the first) whose `tools` array is byte-identical to the previous request's.
        same_instructions: The same for the instructions.
        extends: Requests (after the first) whose messages start with all of the previous request's messages.
    """

    requests: int
    same_tools: int
    same_instructions: int
    extends: int


def stability(bodies: Sequence[dict[str, Any]]) -> Stability:
    """The `Stability` of one run's request bodies, in order."""
    pairs = list(pairwise(bodies))
    return Stability(
        requests=len(bodies),
        same_tools=sum(tools_of(a) == tools_of(b) for a, b in pairs),
        same_instructions=sum(instructions_of(a) == instructions_of(b) for a, b in pairs),
        extends=sum(conversation_of(b)[: len(conversation_of(a))] == conversation_of(a) for a, b in pairs),
    )


def scripts() -> dict[str, list[Turn]]:
    """Each row's calls for `TASKS` (then the text `done`)."""
    proxied: list[Turn] = []
    searched: list[Turn] = []
    for group, tool, args in TASKS:
        query = tool.replace('_', ' ')
        proxied += [
            ('search_proxy_tools', {'query': query}),
            ('call_proxy_tool', {'group': group, 'tool': tool, 'arguments': args}),
        ]
        searched += [('search_tools', {'queries': [query]}), (tool, args)]
    return {PROXY: [*proxied, 'done'], TOOL_SEARCH: [*searched, 'done']}


async def measure() -> dict[str, tuple[Stability, list[str]]]:
    """Run `TASKS` once per row; per row its `Stability` and the tool results the run got, in order."""
    results: dict[str, tuple[Stability, list[str]]] = {}
    with RecordingServer() as server:
        for row, script in scripts().items():
            server.clear()
            server.script = script
            client = openai_client(server)
            try:
                results[row] = await _run(row, openai_model(client), server)
            finally:
                await client.close()
    return results


async def _run(row: str, model: Any, server: RecordingServer) -> tuple[Stability, list[str]]:
    from pydantic_ai.messages import ToolReturnPart

    if row == PROXY:
        agent: Agent[None, str] = Agent(model, capabilities=[proxy()])
    else:
        agent = Agent(model, toolsets=list(toolsets(defer_loading=True).values()), capabilities=[ToolSearch()])
    result = await agent.run('Do the tasks.')
    outputs = [
        p.model_response_str()
        for m in result.all_messages()
        for p in getattr(m, 'parts', ())
        if isinstance(p, ToolReturnPart) and p.tool_name not in ('search_proxy_tools', 'search_tools')
    ]
    return stability(server.requests), outputs


def table(results: dict[str, tuple[Stability, list[str]]]) -> list[str]:
    """The printed table: one row per agent."""
    lines = [
        '| agent | requests | kept the previous `tools` | kept the instructions | messages extend the previous |',
        '|---|---:|---:|---:|---:|',
    ]
    for row, (s, _) in results.items():
        later = s.requests - 1
        lines.append(
            f'| {row} | {s.requests} | {s.same_tools} of {later} | {s.same_instructions} of {later} | {s.extends} of {later} |'
        )
    return lines
