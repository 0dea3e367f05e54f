"""Many MCP servers: time to the first model request, server processes started and their memory, per way of
offering them (issue 29; `bench/lib/mcp_startup.py` says what is measured). `bench.perf --only mcp` prints the same.

    .venv-bench/bin/python -m bench.mcp_servers [--runs 3] [--servers 6] [--tools 20] [--start-delay 1]

With `--production`: servers in a long-lived process (`bench/lib/mcp_production.py`): start on a busy machine, three
runs in one process, a dead entry, the memory of the servers kept between runs; all against plain Pydantic AI.

    .venv/bin/python -m bench.mcp_servers --production [--busy-runs 10] [--busy 2] [--start-cpu 1] [--runs 3]
"""

from __future__ import annotations

import asyncio
import sys

from bench.lib import mcp_production
from bench.lib.mcp_startup import report

if __name__ == '__main__':
    if '--production' in sys.argv[1:]:
        mcp_production.main([a for a in sys.argv[1:] if a != '--production'])
    else:
        asyncio.run(report())
