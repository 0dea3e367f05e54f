"""Many MCP servers: time to the first model request, server processes started and their memory, per way of
offering them (issue 29). Every figure is measured in this one run, against Pydantic AI's own ways in the same run.

Six stdio servers (`bench/lib/slow_mcp_server.py`: the official `mcp` SDK, 20 tools each, 1 s asleep at start like a
warm `npx`/`uvx`) in one `mcpServers` file, offered as:

- `toolsets=load_mcp_toolsets(file)`: Pydantic AI's own (servers entered one after another);
- `ToolSearch` over the same toolsets (Pydantic AI's deferred search; its start is the same);
- `ToolProxyCapability.from_mcp_config(file)` with its servers entered one after another (how this package started
  them before concurrent start: the reference of the ratios);
- `ToolProxyCapability.from_mcp_config(file)`: eager, started concurrently, without a listing cache (the run waits
  for every server's listing), and with a warm one (the first request is built from the cached listings while the
  servers start in the background; the call waits for its server);
- `from_mcp_config(file, lazy=True)` with a warm listing cache: a run that only searches, and one that searches
  and calls one tool.

The listing cache is filled once before the measured runs.

A `FunctionModel` plays the model (search, call, answer as each mode allows); the time to its first request is
taken from `agent.run`'s start, median of `--runs` runs. The servers' processes are counted from their pid file and
their memory (RSS, MiB) read from /proc at the first model request, summed over the servers then running. Last, the
search page of the lazy run is compared byte for byte with the eager run's (same listings).

    .venv-bench/bin/python -m bench.mcp_servers [--runs 3] [--servers 6] [--tools 20] [--start-delay 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import CombinedToolset

from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.controls.surface import ProxySurfaceToolset
from pydantic_ai_toolproxy.mcp_listing_cache import SQLiteListingStore

SERVER = str(Path(__file__).resolve().parent / 'slow_mcp_server.py')
QUERY = 'search calendar items'


def rss_mib(pids: list[int]) -> float:
    """Summed resident memory of the processes `pids` that still run, MiB (from /proc/<pid>/status)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f'/proc/{pid}/status').read_text().splitlines():
                if line.startswith('VmRSS:'):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def started(pid_file: Path) -> list[int]:
    return [int(line.split()[0]) for line in pid_file.read_text().splitlines()] if pid_file.exists() else []


class Measured:
    """A scripted model that records when it was first asked and what the servers held at that moment."""

    def __init__(self, pid_file: Path, steps: list[Callable[[list[ModelMessage], AgentInfo], ModelResponse]]):
        self.pid_file = pid_file
        self.steps = steps
        self.first_at: float | None = None
        self.first_rss = 0.0
        self.pages: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if self.first_at is None:
            self.first_at = time.monotonic()
            self.first_rss = rss_mib(started(self.pid_file))
        for message in messages[-1:]:
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name in ('search_proxy_tools', 'search_tools'):
                    self.pages.append(part.model_response_str())
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        return self.steps[min(step, len(self.steps) - 1)](messages, info)


def say(text: str) -> Callable[..., ModelResponse]:
    return lambda messages, info: ModelResponse(parts=[TextPart(text)])


def call(name: str, args: dict[str, Any]) -> Callable[..., ModelResponse]:
    return lambda messages, info: ModelResponse(parts=[ToolCallPart(name, args)])


def first_found(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the first tool the last proxy search returned."""
    page = json.loads(next(p for p in messages[-1].parts if isinstance(p, ToolReturnPart)).model_response_str())
    tool = page['tools'][0]
    return ModelResponse(
        parts=[
            ToolCallPart(
                'call_proxy_tool', {'group': tool['group'], 'tool': tool['tool'], 'arguments': {'item_id': 'x'}}
            )
        ]
    )


async def measure(mode: str, config: Path, pid_file: Path, store: SQLiteListingStore) -> dict[str, Any]:
    from pydantic_ai.mcp import load_mcp_toolsets

    pid_file.unlink(missing_ok=True)
    search = call('search_proxy_tools', {'query': QUERY})
    proxy: ToolProxyCapability[Any] | None = None
    if mode == 'toolsets=':
        model = Measured(pid_file, [say('done')])
        agent: Agent[None, str] = Agent(FunctionModel(model), toolsets=load_mcp_toolsets(config))
    elif mode == 'ToolSearch':
        model = Measured(pid_file, [call('search_tools', {'queries': [QUERY]}), say('done')])
        agent = Agent(FunctionModel(model), toolsets=load_mcp_toolsets(config), capabilities=[ToolSearch()])
    elif mode in ('proxy, eager', SEQUENTIAL, WARM_EAGER):
        model = Measured(pid_file, [search, first_found, say('done')])
        proxy = ToolProxyCapability.from_mcp_config(config, listing_cache=store if mode == WARM_EAGER else None)
        agent = Agent(FunctionModel(model), capabilities=[proxy])
    else:
        steps = [search, say('done')] if mode == 'proxy, lazy: search only' else [search, first_found, say('done')]
        model = Measured(pid_file, steps)
        proxy = ToolProxyCapability.from_mcp_config(config, lazy=True, listing_cache=store)
        agent = Agent(FunctionModel(model), capabilities=[proxy])
    concurrent = ProxySurfaceToolset.__aenter__
    if mode == SEQUENTIAL:  # the servers entered one after another, as CombinedToolset enters its children
        ProxySurfaceToolset.__aenter__ = CombinedToolset.__aenter__  # type: ignore[method-assign]
    try:
        began = time.monotonic()
        await agent.run('go')
        ended = time.monotonic()
    finally:
        ProxySurfaceToolset.__aenter__ = concurrent  # type: ignore[method-assign]
    await asyncio.sleep(0.2)
    assert model.first_at is not None
    left_running = sum(os.path.exists(f'/proc/{pid}') for pid in started(pid_file))
    if proxy is not None:  # kept for this loop's next run of the same agent; the next mode builds its own
        await proxy.stop_mcp_servers()
    return {
        'first_request_s': model.first_at - began,
        'run_s': ended - began,
        'starts': len(started(pid_file)),
        'rss_mib': model.first_rss,
        'left_running': left_running,
        'pages': model.pages,
    }


SEQUENTIAL = 'proxy, eager, one after another (before concurrent start)'
WARM_EAGER = 'proxy, eager, listings cached'
MODES = (
    'toolsets=',
    'ToolSearch',
    SEQUENTIAL,
    'proxy, eager',
    WARM_EAGER,
    'proxy, lazy: search only',
    'proxy, lazy: search + call',
)


async def report(argv: list[str] | None = None) -> None:
    """Measure every mode `--runs` times, alternating, and print one Markdown table (`argv`: the flags)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--servers', type=int, default=6)
    parser.add_argument('--tools', type=int, default=20)
    parser.add_argument('--start-delay', type=float, default=1.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pid_file = folder / 'pids'
        servers = {
            f'service_{i}': {
                'command': sys.executable,
                'args': [SERVER, '--name', f'service_{i}', '--tools', str(args.tools), '--start-delay',
                         str(args.start_delay), '--pid-file', str(pid_file)],
            }
            for i in range(args.servers)
        }  # fmt: skip
        config = folder / 'mcp.json'
        config.write_text(json.dumps({'mcpServers': servers}))
        store = SQLiteListingStore(folder / 'listings.sqlite3')
        results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
        filler = ToolProxyCapability.from_mcp_config(config, listing_cache=store)
        await Agent(FunctionModel(Measured(pid_file, [say('done')])), capabilities=[filler]).run('fill the cache')
        await filler.stop_mcp_servers()
        for _ in range(args.runs):
            for mode in MODES:  # alternating: load drifts hit every mode alike
                results[mode].append(await measure(mode, config, pid_file, store))
        load = os.getloadavg()[0]
    reference = statistics.median(r['first_request_s'] for r in results[SEQUENTIAL])
    print(
        f'\n### {args.servers} stdio MCP servers x {args.tools} tools, {args.start_delay:g} s start each '
        f'(median of {args.runs} runs, load {load:.2f})\n'
    )
    print('| offered as | first model request (s) | vs one after another | whole run (s) | servers started | server RSS at '
          'first request (MiB) | kept running |')  # fmt: skip
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for mode in MODES:
        rows = results[mode]
        first = statistics.median(r['first_request_s'] for r in rows)
        print(
            f'| {mode} | {first:.2f} | {first / reference:.2f}x | {statistics.median(r["run_s"] for r in rows):.2f} | '
            f'{max(r["starts"] for r in rows)} | {statistics.median(r["rss_mib"] for r in rows):.0f} | '
            f'{max(r["left_running"] for r in rows)} |'
        )
    eager_page = results['proxy, eager'][-1]['pages'][0]
    lazy_page = results['proxy, lazy: search only'][-1]['pages'][0]
    print(f'\nSearch page from the listing cache equals the page from live servers: {eager_page == lazy_page} '
          f'({len(lazy_page.encode())} bytes)')  # fmt: skip
