"""A stdio MCP server for `bench/lib/mcp_startup.py`: sleeps `--start-delay` seconds (a cold `npx`/`uvx` start), spends
`--start-cpu` seconds of CPU (a heavy server's imports), then
serves `--tools` generated tools through the official `mcp` SDK (`MCPServer`), each with its own description and
parameters. `--pid-file F` appends `<pid> <unix time>` to F at start, so the benchmark counts starts.

    python bench/lib/slow_mcp_server.py --name files --tools 20 --start-delay 1 --pid-file /tmp/pids
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

TOPICS = ('files', 'calendar', 'tickets', 'weather', 'database', 'mail', 'maps', 'music', 'notes', 'payments')
VERBS = ('list', 'get', 'create', 'update', 'delete', 'search', 'export', 'archive', 'share', 'count')


def _tool(name: str) -> Any:
    def tool(item_id: str, limit: int = 10) -> str:
        return f'{name} {item_id} {limit}'

    return tool


def main() -> None:
    """Parse the flags, record the start, sleep, then serve over stdio until stdin closes."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--name', default='bench')
    parser.add_argument('--tools', type=int, default=20)
    parser.add_argument('--start-delay', type=float, default=1.0)
    parser.add_argument('--start-cpu', type=float, default=0.0)
    parser.add_argument('--pid-file')
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, 'a') as f:
            f.write(f'{os.getpid()} {time.time():.3f}\n')
    time.sleep(args.start_delay)
    while time.process_time() < args.start_cpu:  # CPU spent at start, as a heavy server's imports spend it
        pass
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name=args.name, version='1.0.0', instructions=f'Tools for {args.name}.', log_level='WARNING')
    offset = sum(map(ord, args.name))  # stable across processes (hash() is salted)
    for i in range(args.tools):
        verb, topic = VERBS[i % len(VERBS)], TOPICS[(i // len(VERBS) + offset) % len(TOPICS)]
        server.add_tool(
            _tool(f'{verb}_{topic}_{i}'),
            name=f'{verb}_{topic}_{i}',
            description=f'{verb.capitalize()} {topic} items of the {args.name} service (variant {i}).',
        )
    server.run('stdio')


if __name__ == '__main__':
    main()
