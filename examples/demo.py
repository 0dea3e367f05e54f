"""The demo: an Agent over every BFCL function definition, a stdio MCP server and one ungrouped tool.

By default a scripted `FunctionModel` plays each request: it searches with the user's words and, as a model
reading the page would, calls the expected tool with BFCL's recorded ground-truth arguments when it is on
the returned page (saying at which rank), or else the top match (saying so). The demo prints, per request,
what was found and the call's result, then the tool-definition bytes sent per model request through the
proxy versus with every tool offered directly.

    python examples/demo.py                      # scripted model, 24 BFCL requests + MCP + ungrouped
    python examples/demo.py --requests 100       # more BFCL requests
    python examples/demo.py --model openai:gpt-5 # a real model: its provider package and API key
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 python examples/demo.py --model openai-chat:NAME  # a Chat Completions server
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_ai
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.exceptions import AgentRunError
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bfcl_tools import bfcl_toolsets, load_bfcl_questions  # noqa: E402

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup  # noqa: E402
from pydantic_ai_toolproxy.cli._probe import definition_bytes  # noqa: E402

SEARCH, CALL = 'search_proxy_tools', 'call_proxy_tool'
SEARCH_LIMIT = 10


@dataclass
class Request:
    prompt: str
    group: str | None  # None: an ungrouped tool
    tool: str
    arguments: dict[str, Any]


def current_utc_time() -> str:
    """Return the current UTC time in ISO 8601 format (the demo's one ungrouped tool)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def mcp_source() -> MCPToolset[Any]:
    return MCPToolset(
        StdioTransport(command=sys.executable, args=[str(HERE / 'mcp_server.py'), '--no-test-tools']), id='notes'
    )


def requests(n: int) -> list[Request]:
    questions = load_bfcl_questions()
    step = max(1, len(questions) // n) if n else 1
    picked = questions[::step][:n]
    from bfcl_tools import load_bfcl_functions

    domain = {f.name: f.domain for f in load_bfcl_functions()}
    out = [Request(q.question, domain[q.tool_name], q.tool_name, q.arguments) for q in picked]
    out.append(
        Request(
            'Convert 100 degrees celsius to fahrenheit',
            'notes',
            'convert_temperature',
            {'value': 100, 'from_unit': 'celsius', 'to_unit': 'fahrenheit'},
        )
    )
    out.append(
        Request(
            'Add a note titled groceries: milk and eggs',
            'notes',
            'add_note',
            {'title': 'groceries', 'body': 'milk and eggs'},
        )
    )
    out.append(Request('What time is it now in UTC?', None, 'current_utc_time', {}))
    return out


def tool_bytes(defs: list[ToolDefinition]) -> int:
    """UTF-8 bytes of the tool definitions as a model API receives them (name, description, parameters)."""
    return sum(definition_bytes(d) for d in defs)


class ScriptedModel:
    """Searches with the user's words, calls the expected tool if the page has it (else the top match), then answers.

    `ranks[prompt]` is the 1-based rank of the expected tool on the page, or None when it was not on it;
    `called[prompt]` is the `(group, tool)` actually called.
    """

    def __init__(self, plan: dict[str, Request]) -> None:
        self.plan = plan
        self.ranks: dict[str, int | None] = {}
        self.called: dict[str, tuple[str, str]] = {}

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = next(
            p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
        )
        req = self.plan[str(prompt)]
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if not returned:
            if req.group is None:
                return ModelResponse(parts=[ToolCallPart(req.tool, req.arguments)])
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': req.prompt, 'limit': SEARCH_LIMIT})])
        part = returned[-1]
        if part.tool_name == SEARCH and part.outcome == 'success':
            page = json.loads(part.model_response_str())
            names = [(t['group'], t['tool']) for t in page['tools']]
            expected = (req.group, req.tool)
            self.ranks[req.prompt] = names.index(expected) + 1 if expected in names else None
            if not names:
                return ModelResponse(parts=[TextPart('No matching tool.')])
            group, tool = expected if expected in names else names[0]
            self.called[req.prompt] = (group, tool)
            return ModelResponse(parts=[ToolCallPart(CALL, {'group': group, 'tool': tool, 'arguments': req.arguments})])
        return ModelResponse(parts=[TextPart(part.model_response_str()[:160])])


def build_agent(model: Any, groups: dict[str, ToolProxyGroup[Any]], proxy: bool) -> Agent[None, str]:
    if proxy:
        return Agent(
            model,
            tools=[current_utc_time],
            retries=3,
            capabilities=[ToolProxyCapability(groups=groups, config=ToolProxyConfig(max_results=SEARCH_LIMIT))],
        )
    return Agent(model, tools=[current_utc_time], toolsets=[g.source for g in groups.values()])  # type: ignore[misc]


def make_groups() -> dict[str, ToolProxyGroup[Any]]:
    groups = {name: ToolProxyGroup(source=ts, description=desc) for name, (ts, desc) in bfcl_toolsets().items()}
    groups['notes'] = ToolProxyGroup(
        source=mcp_source(),
        description='Personal notes (add, list, read, delete) and weather forecasts, temperature conversion',
    )
    return groups


async def request_bytes(proxy: bool) -> tuple[int, int]:
    """Tool-definition bytes of one model request (through the proxy, or every tool direct) and the tool count."""
    seen: list[list[ToolDefinition]] = []

    def once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.function_tools)
        return ModelResponse(parts=[TextPart('ok')])

    await build_agent(FunctionModel(once), make_groups(), proxy=proxy).run('hi')
    return tool_bytes(seen[0]), len(seen[0])


def real_model(name: str) -> Model:
    """The model `provider:name`; exits with a one-line install hint when its provider package is missing."""
    try:
        return infer_model(name)
    except ImportError as exc:
        provider = name.split(':', 1)[0]
        extra = {'google-gla': 'google', 'google-vertex': 'google'}.get(provider, provider)
        sys.exit(
            f'demo: --model {name} needs the {provider} provider package: '
            f'.venv/bin/python -m pip install "pydantic-ai-slim[{extra}]" ({exc})'
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--requests', type=int, default=24, help='number of BFCL requests (default 24)')
    parser.add_argument(
        '--model', default=None, help='provider:name of a real model (its provider package and API key)'
    )
    args = parser.parse_args()
    pydantic_ai.BANNER_ENABLED = False  # the demo owns its output
    model: Any = real_model(args.model) if args.model else None

    reqs = requests(args.requests)
    groups = make_groups()
    total_tools = sum(len(ts.tools) for ts, _ in bfcl_toolsets().values())
    print(f'{total_tools:,} BFCL tools in {len(groups) - 1} groups + MCP group "notes" (stdio) + 1 ungrouped tool\n')

    scripted = ScriptedModel({r.prompt: r for r in reqs})
    model = model or FunctionModel(scripted)
    agent = build_agent(model, groups, proxy=True)
    found = top1 = 0
    started = time.perf_counter()
    async with agent:
        for i, req in enumerate(reqs, 1):
            try:
                result = await agent.run(req.prompt)
            except AgentRunError as e:  # a real model may exhaust its retries; report and go on
                print(f'[{i:3d}] {req.group or "-"}/{req.tool}: run failed: {type(e).__name__}: {e}')
                continue
            rank = scripted.ranks.get(req.prompt) if args.model is None else None
            if req.group is None:
                where = 'ungrouped (called directly)'
            elif args.model is None:
                if rank:
                    where = f'found at rank {rank}, called it'
                elif req.prompt in scripted.called:
                    group, tool = scripted.called[req.prompt]
                    where = f'not in the top {SEARCH_LIMIT}: called the top match {group}/{tool} instead'
                else:
                    where = 'no tool found'
                found += rank is not None
                top1 += rank == 1
            else:
                where = 'real model'
            call = next(
                (
                    p
                    for m in result.all_messages()
                    if isinstance(m, ModelRequest)
                    for p in m.parts
                    if isinstance(p, ToolReturnPart) and p.tool_name in (CALL, req.tool)
                ),
                None,
            )
            outcome = call.model_response_str()[:100] if call is not None else '(no call)'
            prompt = req.prompt.replace('\n', ' ')
            print(
                f'[{i:3d}] {req.group or "-"}/{req.tool}: {where}\n      request: {prompt[:100]}\n      result:  {outcome}'
            )
    elapsed = time.perf_counter() - started
    grouped = sum(1 for r in reqs if r.group is not None)
    direct, n_direct = await request_bytes(proxy=False)
    proxied, _ = await request_bytes(proxy=True)
    print('\nSummary')
    if args.model is None:
        print(f'  right tool found in top {SEARCH_LIMIT}: {found}/{grouped}; ranked first: {top1}/{grouped}')
    print(f'  {len(reqs)} requests in {elapsed:.2f} s')
    print(
        f'  tool-definition bytes per model request: proxy {proxied:,} B vs direct {direct:,} B ({n_direct:,} tools) = {100 * proxied / direct:.2f}%'
    )


if __name__ == '__main__':
    asyncio.run(main())
