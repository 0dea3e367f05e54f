"""The demo's tool collection (examples/demo.py) as sources for the `toolproxy` command line.

    toolproxy --config examples/toolproxy.toml inspect          # everything, as the demo's agent has it
    toolproxy -s examples/demo_sources.py:proxy -s examples/demo_sources.py:clock inspect

* `bfcl_groups()`: the 17 BFCL groups (1,853 tools), group name -> (toolset, description);
* `notes()`: the stdio MCP server `mcp_server.py --no-test-tools` as an `MCPToolset`;
* `proxy()`: the demo's `ToolProxyCapability` (BFCL groups + `notes`, `max_results=10`);
* `clock`: the demo's one ungrouped tool, `current_utc_time`, as a `FunctionToolset`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic_ai.toolsets import FunctionToolset

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bfcl_tools import bfcl_toolsets
from demo import SEARCH_LIMIT, current_utc_time, make_groups, mcp_source

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig

NOTES_DESCRIPTION = 'Personal notes (add, list, read, delete) and weather forecasts, temperature conversion'


def bfcl_groups() -> dict[str, tuple[FunctionToolset[Any], str]]:
    """The BFCL groups of the demo: group name -> (toolset, description)."""
    return bfcl_toolsets()


def notes() -> Any:
    """The demo's MCP server over stdio, as the `notes` group's source."""
    return mcp_source()


def proxy() -> ToolProxyCapability[Any]:
    """The demo's proxy: every BFCL group plus `notes`, with the demo's config."""
    return ToolProxyCapability(groups=make_groups(), config=ToolProxyConfig(max_results=SEARCH_LIMIT))


clock = FunctionToolset([current_utc_time], id='clock')
"""The demo's direct (ungrouped) tool."""
