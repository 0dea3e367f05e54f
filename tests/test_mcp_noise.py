"""A server's stdout noise stays the server's (issue 35 item 5): a stdio server of an `mcpServers` file that prints a
banner on stdout (tests/banner_mcp_server.py) puts no traceback on the host's stderr, one warning line at most per
server, and the lines in the server's log file; a server the host built itself keeps the MCP SDK's own logging.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai import Agent
from support import CALL, Script, last_return, toolproxy

from pydantic_ai_toolproxy import ToolProxyCapability

ROOT = Path(__file__).resolve().parent.parent
BANNER = str(ROOT / 'tests' / 'banner_mcp_server.py')
NOTES = str(ROOT / 'examples' / 'mcp_server.py')
_MESSAGE = 'Failed to parse JSONRPC message from server'

HOST = """
import sys
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai_toolproxy import ToolProxyCapability

def model(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('call_proxy_tool', {'group': 'loud', 'tool': 'echo',
                                                                      'arguments': {'text': 'hi'}})])
    return ModelResponse(parts=[TextPart('done')])

proxy = ToolProxyCapability.from_mcp_config(sys.argv[1], listing_cache=None, server_log=sys.argv[2])
for _ in range(2):  # two runs, one start of the server (kept for the second run)
    result = Agent(FunctionModel(model), capabilities=[proxy]).run_sync('x')
    print(result.all_messages()[-2].parts[0].content)
"""


def write(tmp_path: Path, banner: int = 3) -> Path:
    servers = {
        'loud': {'command': sys.executable, 'args': [BANNER, '--banner', str(banner)]},
        'quiet': {'command': sys.executable, 'args': [NOTES, '--no-test-tools']},
    }
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': servers}), encoding='utf-8')
    return path


def test_a_banner_on_stdout_puts_no_traceback_on_the_hosts_stderr(tmp_path: Path) -> None:
    path = write(tmp_path)
    logs = tmp_path / 'logs'
    host = tmp_path / 'host.py'
    host.write_text(HOST, encoding='utf-8')
    proc = subprocess.run(
        [sys.executable, str(host), str(path), str(logs)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['hi', 'hi']
    assert 'Traceback' not in proc.stderr and 'Failed to parse' not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr  # one line for the server, for both runs
    assert "MCP server 'loud' wrote a line on stdout that is not MCP" in lines[0] and 'loud.log' in lines[0]
    kept = (logs / 'loud.log').read_text(encoding='utf-8')
    assert kept.count('Starting the banner server') == 3  # 3 banner lines, one start kept for both runs
    assert not (logs / 'quiet.log').exists() or 'not MCP' not in (logs / 'quiet.log').read_text()


async def test_one_warning_per_server_and_nothing_from_the_sdk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    logs = tmp_path / 'logs'  # a folder of this test's own: its warning is not one an earlier test gave
    proxy = ToolProxyCapability.from_mcp_config(write(tmp_path, banner=2), listing_cache=None, server_log=logs)
    script = Script([[(CALL, {'group': 'loud', 'tool': 'add', 'arguments': {'a': 2, 'b': 3}})], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert last_return(result.all_messages(), CALL).content == 5
    assert [r for r in caplog.records if r.name == 'mcp.client.stdio'] == []
    noise = [r.getMessage() for r in caplog.records if 'not MCP' in r.getMessage()]
    assert len(noise) == 1 and "'loud'" in noise[0]  # one for the server's two banner lines
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING]


def test_a_server_the_host_built_keeps_the_sdks_logging(caplog: pytest.LogCaptureFixture) -> None:
    from pydantic_ai_toolproxy.mcp_servers.noise import _StdoutNoise

    record = logging.LogRecord('mcp.client.stdio', logging.ERROR, __file__, 1, _MESSAGE, None, None)
    assert _StdoutNoise().filter(record)  # no server of an mcpServers file is speaking: left as it is


def test_the_cli_shows_one_warning_line_for_a_banner(tmp_path: Path) -> None:
    proc = toolproxy('--mcp-config', str(write(tmp_path)), '--listing-cache', 'off', 'inspect')
    assert proc.returncode == 0, proc.stderr
    assert 'Traceback' not in proc.stderr and 'Failed to parse' not in proc.stderr, proc.stderr
    assert proc.stderr.count("MCP server 'loud' wrote a line on stdout that is not MCP") == 1
