"""Many MCP servers: time to the first model request, server processes started and their memory, per way of
offering them (issue 29; `bench/lib/mcp_startup.py` says what is measured). `bench.perf --only mcp` prints the same.

    .venv-bench/bin/python -m bench.mcp_servers [--runs 3] [--servers 6] [--tools 20] [--start-delay 1]
"""

from __future__ import annotations

import asyncio

from bench.lib.mcp_startup import report

if __name__ == '__main__':
    asyncio.run(report())
