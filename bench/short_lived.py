"""Short-lived processes with the local embedder: 4 processes in a row over 120 new tools (BFCL's first 120, in
their groups), default settings, one SQLite embedding cache; each runs one agent search and exits normally.

Run from the repository root: `PYTHONPATH=python .venv/bin/python -m bench.short_lived` (the `local` extra and the
model package; `--model` as `bench.local_embedder`; `--busy N` keeps N processes spinning on the cores meanwhile, a
loaded machine made repeatable; `--rounds R` runs the sequence R times, each over a fresh cache). Prints, per
process, its search's time and its wall time; then how many of the 120 texts have a vector in the cache and how many
claims are left.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lib.embedder import MODEL_DIR, extracted_model
from bench.lib.sets import bfcl

TOOLS = 120


def worker(cache: Path, folder: Path) -> None:
    """One process: an agent run with one search over the tools, then exit. Prints `{"search": seconds}`."""
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

    def run(**kwargs: Any) -> str:
        """A BFCL tool (never called here)."""
        return 'ok'

    tools, descriptions, _ = bfcl()
    groups: dict[str, list[Tool[Any]]] = {}
    for tool in tools[:TOOLS]:
        groups.setdefault(tool.group, []).append(Tool(run, name=tool.name, description=tool.description))
    proxy = ToolProxyCapability(
        groups={
            name: ToolProxyGroup(source=FunctionToolset(members), description=descriptions[name])
            for name, members in groups.items()
        },
        config=ToolProxyConfig(embedder=f'local:{folder}', embedding_cache=str(cache)),
    )
    took: list[float] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        took.append(time.perf_counter())
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'area of a circle'})])
        return ModelResponse(parts=[TextPart('done')])

    Agent(FunctionModel(llm), capabilities=[proxy]).run_sync('go')
    print(json.dumps({'search': took[1] - took[0]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--model', type=Path, default=MODEL_DIR)
    parser.add_argument('--processes', type=int, default=4)
    parser.add_argument('--busy', type=int, default=0, help='processes spinning on the cores meanwhile')
    parser.add_argument('--rounds', type=int, default=1, help='sequences of processes, each over a fresh cache')
    parser.add_argument('--worker', type=Path, help=argparse.SUPPRESS)  # the cache file of one worker process
    args = parser.parse_args()
    folder = extracted_model(args.model).resolve()
    if args.worker is not None:
        worker(args.worker, folder)
        return
    load = os.getloadavg()
    print(f'load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores, {args.busy} spinning')
    spinners = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(args.busy)]
    try:
        for round_ in range(args.rounds):
            if args.rounds > 1:
                print(f'round {round_ + 1}')
            sequence(folder, args.processes)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    load = os.getloadavg()
    print(f'load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end')


def sequence(folder: Path, processes: int) -> None:
    """`processes` worker processes in a row over one fresh cache, each line printed as it ends."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / 'cache.sqlite3'
        for at in range(processes):
            began = time.perf_counter()
            command = [sys.executable, '-m', 'bench.short_lived', '--model', str(folder), '--worker', str(cache)]
            proc = subprocess.run(command, capture_output=True, text=True, check=True)
            wall = time.perf_counter() - began
            with sqlite3.connect(cache) as db:
                stored = db.execute('SELECT COUNT(*) FROM vectors').fetchone()[0]
                claims = db.execute('SELECT COUNT(*) FROM claims').fetchone()[0]
            search = json.loads(proc.stdout.splitlines()[-1])['search']
            print(
                f'process {at + 1}: first search {search:.2f} s, process {wall:.1f} s; then {stored} of {TOOLS} '
                f'vectors stored, {claims} claims',
                flush=True,
            )


if __name__ == '__main__':
    main()
