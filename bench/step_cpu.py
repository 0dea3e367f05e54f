"""CPU per agent step (`time.process_time`, median ms of `--runs` runs of `--steps` steps, FunctionModel) of three
kinds of step, optionally against another checkout measured in the same run:

- **search control, 1,600 and 8,000 tools**: every step calls `search_proxy_tools` (BFCL functions and their
  replicas, one `FunctionToolset` per domain), with a different keyword query each step;
- **lazy MCP step, 6 cached servers**: `from_mcp_config(lazy=True)` over six stdio servers of 20 tools each whose
  listings are in the listing cache, so no server starts; every step calls a trivial ungrouped tool, so the step is
  the proxy's per-step work over the cached listings (checked: no server process is started).

    .venv/bin/python -m bench.step_cpu [--runs 5] [--steps 6] [--before PATH] [--rounds 2] [--only search|mcp]

`--before PATH` names the `python/` folder of another checkout (e.g. `git worktree add /tmp/before 350870f`, with
its own compiled core copied in): each side is measured in a subprocess of its own, the sides alternated per round
(`--rounds`), and the table shows both and their ratio.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

ROWS = ('search control, 1,600 tools', 'search control, 8,000 tools', 'lazy MCP step, 6 cached servers')


def _searching_model(steps: int, queries: list[str]) -> Any:
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from bench.lib.agent_steps import WARM_UP

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart))
        prompt = messages[0].parts[-1] if messages and isinstance(messages[0], ModelRequest) else None
        if done >= steps or getattr(prompt, 'content', None) == WARM_UP:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': queries[done % len(queries)]})])

    return FunctionModel(fn)


async def _search_rows(steps: int, runs: int) -> dict[str, float]:
    from pydantic_ai import Agent

    from bench.lib.agent_steps import noop, proxy_for, step_times, toolsets
    from bench.lib.replicas import corpus, keyword_queries
    from examples.bfcl_tools import load_bfcl_functions

    base = load_bfcl_functions()
    queries = keyword_queries(base, 50)
    out: dict[str, float] = {}
    for n, row in ((1_600, ROWS[0]), (8_000, ROWS[1])):
        agent = Agent(
            _searching_model(steps, queries), tools=[noop], capabilities=[proxy_for(toolsets(corpus(n, base)))]
        )
        out[row] = (await step_times([agent], steps, runs))[0]
    return out


async def _lazy_mcp_row(steps: int, runs: int, folder: Path) -> float:
    from pydantic_ai import Agent

    from bench.lib.agent_steps import noop, step_times, stepping_model
    from bench.lib.mcp_startup import SERVER, started
    from pydantic_ai_toolproxy import ToolProxyCapability
    from pydantic_ai_toolproxy.mcp_listing_cache import SQLiteListingStore

    pids = folder / 'pids'
    servers = {
        f'service_{i}': {
            'command': sys.executable,
            'args': [SERVER, '--name', f'service_{i}', '--tools', '20', '--start-delay', '0', '--pid-file', str(pids)],
        }
        for i in range(6)
    }
    config = folder / 'mcp.json'
    config.write_text(json.dumps({'mcpServers': servers}))
    store = SQLiteListingStore(folder / 'listings.sqlite3')
    filler = ToolProxyCapability.from_mcp_config(config, listing_cache=store)
    await Agent(stepping_model(0), tools=[noop], capabilities=[filler]).run('fill the listing cache')
    await filler.stop_mcp_servers()
    before = len(started(pids))
    proxy = ToolProxyCapability.from_mcp_config(config, lazy=True, listing_cache=store)
    agent = Agent(stepping_model(steps), tools=[noop], capabilities=[proxy])
    cpu = (await step_times([agent], steps, runs))[0]
    if len(started(pids)) != before:
        raise RuntimeError('a lazy step started a server: the row would not measure cached listings')
    await proxy.stop_mcp_servers()
    return cpu


async def measure(steps: int, runs: int, only: str | None = None) -> dict[str, float]:
    """Each row's median CPU ms per step, in this process (the checkout this interpreter imports); `only`: `search` or `mcp`."""
    rows = await _search_rows(steps, runs) if only in (None, 'search') else {}
    if only in (None, 'mcp'):
        with tempfile.TemporaryDirectory() as tmp:
            rows[ROWS[2]] = await _lazy_mcp_row(steps, runs, Path(tmp))
    return rows


def _side(python_dir: Path, steps: int, runs: int, only: str | None) -> dict[str, float]:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(python_dir), str(ROOT)])}
    command = [sys.executable, '-m', 'bench.step_cpu', '--measure', '--steps', str(steps), '--runs', str(runs)]
    command += ['--only', only] if only else []
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f'{python_dir}: {proc.stderr[-2000:]}')
    measured: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return measured


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table as Markdown (`argv`: the flags)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--steps', type=int, default=6)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--rounds', type=int, default=2, help='with --before: subprocesses per side, alternated')
    parser.add_argument('--before', type=Path, help="another checkout's python/ folder")
    parser.add_argument('--only', choices=('search', 'mcp'), help='measure only these rows')
    parser.add_argument('--measure', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(asyncio.run(measure(args.steps, args.runs, args.only))))
        return
    sides = {'after': ROOT / 'python'}
    if args.before is not None:
        sides = {'before': args.before.resolve(), **sides}
    found: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for _ in range(args.rounds if args.before is not None else 1):
        for side, folder in sides.items():
            found[side].append(_side(folder, args.steps, args.runs, args.only))
    load = os.getloadavg()[0]
    print(f'\n### CPU per agent step (median ms of {args.runs} runs x {args.steps} steps per round; load {load:.2f})\n')
    names = list(sides)
    print(
        '| step | '
        + ' | '.join(f'{n} (ms, per round)' for n in names)
        + (' | after / before |' if len(names) > 1 else ' |')
    )
    print('| --- |' + ' ---: |' * (len(names) + (len(names) > 1)))
    for row in (r for r in ROWS if r in found['after'][0]):
        cells = [', '.join(f'{r[row]:.1f}' for r in found[n]) for n in names]
        ratio = ''
        if len(names) > 1:
            b = statistics.median(r[row] for r in found['before'])
            a = statistics.median(r[row] for r in found['after'])
            ratio = f' {a / b:.2f}x |'
        print(f'| {row} | ' + ' | '.join(cells) + ' |' + ratio)


if __name__ == '__main__':
    main()
