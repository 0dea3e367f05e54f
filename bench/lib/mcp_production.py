"""MCP servers in a long-lived process, against plain Pydantic AI (`toolsets=load_mcp_toolsets(file)`) measured in the
same run and conditions. Four figures:

1. **Start on a busy machine**: six servers that each spend `--start-cpu` s of CPU at start, with `--busy` processes
   spinning beside them; `--busy-runs` eager runs, each on a fresh event loop (so each starts every server): in how
   many was every group present at the first model request (plain Pydantic AI: in how many did the run succeed
   with every server).
2. **Three runs in one process** (one event loop, one agent): each run's time to the first model request, its whole
   time and the servers it started, for plain Pydantic AI, the proxy eager without a listing cache (`cold cache`:
   the run waits for every server's listing), eager with a warm one (the first request is built from the cache while
   the servers start) and lazy (warm listing cache).
   Each run makes one tool call. Ratios: proxy runs 2-3 against plain runs 2-3; first model request of run 1.
3. **One dead entry** (a command that exits at once, beside the six servers): runs 1-3's time to the first model
   request (plain Pydantic AI fails every run on it).
4. **Memory**: the servers' RSS (MiB, /proc) kept between runs.

    .venv/bin/python -m bench.mcp_servers --production [--busy-runs 10] [--busy 2] [--start-cpu 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bench.lib.mcp_startup import SERVER, rss_mib, started
from bench.lib.slow_mcp_server import TOPICS
from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.mcp_listing_cache import SQLiteListingStore

DEAD = {'command': sys.executable, 'args': ['-c', 'import sys; sys.stderr.write("no such package\\n"); sys.exit(1)']}


def servers(pid_file: Path, count: int, start_cpu: float, start_delay: float) -> dict[str, Any]:
    return {
        f'service_{i}': {
            'command': sys.executable,
            'args': [SERVER, '--name', f'service_{i}', '--tools', '20', '--start-delay', str(start_delay),
                     '--start-cpu', str(start_cpu), '--pid-file', str(pid_file)],
        }
        for i in range(count)
    }  # fmt: skip


class Clock:
    """A scripted model: one tool call (`call`), then the answer; records when it was first asked and what it saw."""

    def __init__(self, call: ToolCallPart | None) -> None:
        self.call = call
        self.first_at: float | None = None
        self.tool_names: list[str] = []
        self.group_enum: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if self.first_at is None:
            self.first_at = time.monotonic()
            self.tool_names = [t.name for t in info.function_tools]
            for tool in info.function_tools:
                if tool.name == 'search_proxy_tools':
                    group = tool.parameters_json_schema['properties']['group']
                    self.group_enum = next(o['enum'] for o in group.get('anyOf', [group]) if 'enum' in o)
        if self.call is not None and sum(isinstance(m, ModelResponse) for m in messages) == 0:
            return ModelResponse(parts=[ToolCallPart(self.call.tool_name, self.call.args)])
        return ModelResponse(parts=[TextPart('done')])


FIRST_TOOL = f'list_{TOPICS[sum(map(ord, "service_0")) % len(TOPICS)]}_0'
"""service_0's first tool (`slow_mcp_server.py` names its tools from the server name)."""
PLAIN_CALL = ToolCallPart(f'service_0_{FIRST_TOOL}', {'item_id': 'x'})  # load_mcp_toolsets prefixes the server name
PROXY_CALL = ToolCallPart('call_proxy_tool', {'group': 'service_0', 'tool': FIRST_TOOL, 'arguments': {'item_id': 'x'}})


async def timed(agent: Agent[None, str], clock: Clock) -> tuple[float, float]:
    began = time.monotonic()
    await agent.run('go', model=FunctionModel(clock))
    assert clock.first_at is not None
    return clock.first_at - began, time.monotonic() - began


def make_agent(mode: str, config: Path, store: SQLiteListingStore) -> Agent[None, str]:
    from pydantic_ai.mcp import load_mcp_toolsets

    if mode == 'plain':
        return Agent(FunctionModel(Clock(None)), toolsets=load_mcp_toolsets(config))
    cache = None if mode.endswith('cold cache') else store  # cold: no listing to serve, every start waited for
    proxy = ToolProxyCapability.from_mcp_config(config, lazy=mode == 'proxy, lazy', listing_cache=cache)
    return Agent(FunctionModel(Clock(None)), capabilities=[proxy])


async def three_runs(mode: str, config: Path, pid_file: Path, store: SQLiteListingStore) -> dict[str, Any]:
    """Three runs of one agent on this event loop; the servers are stopped by the loop's end (the caller's
    `asyncio.run`)."""
    agent = make_agent(mode, config, store)
    call = PLAIN_CALL if mode == 'plain' else PROXY_CALL
    rows = []
    for _ in range(3):
        before = len(started(pid_file))
        first, whole = await timed(agent, Clock(call))
        rows.append({'first_s': first, 'run_s': whole, 'starts': len(started(pid_file)) - before})
    kept = [pid for pid in started(pid_file) if os.path.exists(f'/proc/{pid}')]
    return {'runs': rows, 'kept': len(kept), 'kept_rss_mib': rss_mib(kept)}


async def busy_run(mode: str, config: Path, count: int, store: SQLiteListingStore) -> bool:
    """One eager run on a fresh loop: whether every group (every server) was there at the first model request."""
    agent = make_agent(mode, config, store)
    clock = Clock(None)
    try:
        await agent.run('go', model=FunctionModel(clock))
    except Exception:  # plain Pydantic AI: a server that fails to start fails the run
        return False
    if mode == 'plain':
        return len({name.split('_')[0] + '_' + name.split('_')[1] for name in clock.tool_names}) == count
    return len(clock.group_enum) == count


def spin(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(count)]


def main(argv: list[str] | None = None) -> None:
    """Run the four measurements and print them as Markdown (`argv`: the flags)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--busy-runs', type=int, default=10)
    parser.add_argument('--busy', type=int, default=2, help='processes spinning beside the busy-start runs')
    parser.add_argument('--start-cpu', type=float, default=1.0)
    parser.add_argument('--servers', type=int, default=6)
    parser.add_argument('--runs', type=int, default=3, help='repetitions of the three-run sequence (medians)')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pid_file = folder / 'pids'
        config = folder / 'mcp.json'
        config.write_text(json.dumps({'mcpServers': servers(pid_file, args.servers, args.start_cpu, 0.0)}))
        dead_config = folder / 'dead.json'
        dead_servers = {**servers(pid_file, args.servers, 0.0, 0.0), 'broken_npx': DEAD}
        dead_config.write_text(json.dumps({'mcpServers': dead_servers}))
        store = SQLiteListingStore(folder / 'listings.sqlite3')
        asyncio.run(three_runs('proxy, eager', config, pid_file, store))  # fills the listing cache

        # 1. start on a busy machine
        spinners = spin(args.busy)
        try:
            present = {'plain': 0, 'proxy, eager, cold cache': 0}  # a warm cache would serve the groups unstarted
            for _ in range(args.busy_runs):
                for mode in present:
                    present[mode] += asyncio.run(busy_run(mode, config, args.servers, store))
            busy_load = os.getloadavg()[0]
        finally:
            for p in spinners:
                p.kill()
                p.wait()
        print(
            f'\n### Start on a busy machine: {args.servers} servers x {args.start_cpu:g} s CPU at start, '
            f'{args.busy} busy processes beside them (load {busy_load:.2f})\n'
        )
        print('| offered as | runs with every group present |')
        print('| --- | ---: |')
        for mode, count in present.items():
            print(f'| {mode} | {count} of {args.busy_runs} |')

        # 2. three runs in one process, alternating modes, repeated
        modes = ('plain', 'proxy, eager, cold cache', 'proxy, eager', 'proxy, lazy')
        results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
        failed = dict.fromkeys(modes, 0)
        for _ in range(args.runs):
            for mode in modes:
                for _attempt in range(5):  # plain Pydantic AI fails the run when a server misses its 5 s start
                    try:
                        results[mode].append(asyncio.run(three_runs(mode, config, pid_file, store)))
                        break
                    except Exception:
                        failed[mode] += 1
                else:
                    raise RuntimeError(f'{mode}: five failed sequences in a row')
        load = os.getloadavg()[0]
        print(f'\n### Three runs of one agent in one process (median of {args.runs}, load {load:.2f})\n')
        print('| offered as | run | first model request (s) | whole run (s) | servers started | vs plain |')
        print('| --- | ---: | ---: | ---: | ---: | ---: |')
        plain = results['plain']
        for mode in modes:
            for i in range(3):
                first = statistics.median(r['runs'][i]['first_s'] for r in results[mode])
                whole = statistics.median(r['runs'][i]['run_s'] for r in results[mode])
                starts = max(r['runs'][i]['starts'] for r in results[mode])
                ref = statistics.median(r['runs'][i]['run_s' if i else 'first_s'] for r in plain)
                ratio = (whole if i else first) / ref
                print(f'| {mode} | {i + 1} | {first:.3f} | {whole:.3f} | {starts} | {ratio:.2f}x |')
        print('\n(vs plain: run 1 compares the first model request, runs 2-3 the whole run.)')
        for mode, count in failed.items():
            if count:
                print(f'- {mode}: {count} sequence(s) failed (a server missed its start) and were run again')
        for mode in modes:
            kept = statistics.median(r['kept_rss_mib'] for r in results[mode])
            count = max(r['kept'] for r in results[mode])
            print(f'- {mode}: {count} server processes kept between runs, {kept:.0f} MiB RSS in all')

        # 3. one dead entry
        dead = asyncio.run(three_runs('proxy, eager', dead_config, pid_file, store))
        print(f'\n### One dead entry beside {args.servers} servers (proxy, eager; plain Pydantic AI fails every run)\n')
        print('| run | first model request (s) | servers started |')
        print('| ---: | ---: | ---: |')
        for i, row in enumerate(dead['runs']):
            print(f'| {i + 1} | {row["first_s"]:.3f} | {row["starts"]} |')
