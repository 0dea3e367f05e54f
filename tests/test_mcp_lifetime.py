"""MCP server lifetime under `from_mcp_config` and the CLI, on the Pydantic AI installed (2.61 to the newest).

Every server here is tests/hostile_mcp_server.py started with `--pid-file`, so each test counts the processes its
run or command started and checks that none is alive once the run or command has ended. The failure modes are the
ones users hit: a server silent at `tools/list` or at `initialize`, a server that crashes with a message on stderr,
a listing that holds a tool named `""`, and `run_sync` followed by `asyncio.run` on the same agent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from support import CALL, SEARCH, Script, last_return, page_of, toolproxy

from pydantic_ai_toolproxy import ToolProxyCapability

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = str(ROOT / 'tests' / 'hostile_mcp_server.py')


def hostile(pids: Path, *extra: str) -> dict[str, Any]:
    return {'command': sys.executable, 'args': [HOSTILE, '--pid-file', str(pids), *extra]}


def write(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': servers}), encoding='utf-8')
    return path


def started(pids: Path) -> list[int]:
    return [int(line.split()[0]) for line in pids.read_text().splitlines() if line.strip()] if pids.exists() else []


def alive(pids: Path, wait: float = 5.0) -> list[int]:
    """The servers of `pids` still running after up to `wait` s (a process being reaped may take a moment)."""
    deadline = time.monotonic() + wait
    while True:
        running = []
        for pid in started(pids):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            running.append(pid)
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def group_enum(script: Script, step: int = 0) -> list[str]:
    schema = script.tool_def(SEARCH, step).parameters_json_schema
    group = schema['properties']['group']
    return next(option['enum'] for option in group['anyOf'] if 'enum' in option)


@pytest.fixture
def pids(tmp_path: Path) -> Any:
    path = tmp_path / 'pids'
    yield path
    for pid in alive(path, wait=0):  # never leave one behind, whatever the test found
        os.kill(pid, 9)


async def test_silent_and_crashing_servers_are_left_out_and_none_outlives_the_run(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    quick = {'startup_timeout_sec': 2}  # what a silent server costs the run that finds it
    path = write(
        tmp_path,
        {
            'ok': hostile(pids),
            'silent_list': {**hostile(pids, '--on-list', 'hang'), **quick},
            'silent_init': {**hostile(pids, '--on-initialize', 'hang'), **quick},
            'crash': hostile(pids, '--on-initialize', 'crash'),
        },
    )
    script = Script([[(SEARCH, {'query': 'plain tool'})], 'done'])
    proxy = ToolProxyCapability.from_mcp_config(path)
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert group_enum(script) == ['ok']
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['tool'] == 'plain_tool'
    assert len(started(pids)) == 4
    assert len(alive(pids, wait=0)) == 1  # the failed ones were stopped; 'ok' is kept for the next run
    assert await proxy.stop_mcp_servers() == 1
    assert alive(pids) == []
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 3, warnings
    [crash] = [w for w in warnings if "'crash'" in w]
    # the cause, from the server's stderr, not only "Connection closed"
    assert 'its stderr ended: starting the hostile server' in crash
    assert 'SSLCertVerificationError: certificate verify failed (hostile test)' in crash
    assert len(crash) < 2_000
    assert any('no answer to tools/list within the start timeout of 2 s' in w for w in warnings)


async def test_a_tool_named_empty_loses_that_tool_with_one_warning_never_the_run(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, {'odd': hostile(pids, '--empty-name'), 'ok': hostile(pids)})
    proxy = ToolProxyCapability.from_mcp_config(path)
    agent = Agent(Script([[(SEARCH, {'query': '', 'group': 'odd'})], 'done']).model, capabilities=[proxy])
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        first = await agent.run('x')
        never_searches = Agent(Script(['done']).model, capabilities=[proxy])
        await never_searches.run('y')
    page = page_of(last_return(first.all_messages(), SEARCH))
    assert '' not in [t['tool'] for t in page['tools']], page
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert warnings == ["MCP server 'odd' listed a tool '' that is left out of group 'odd': its name '' cannot be "
                        'called through the proxy']  # fmt: skip
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


def test_run_sync_then_asyncio_run_on_one_agent_keeps_every_group(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'ok': hostile(pids), 'other': hostile(pids)})
    script = Script(
        [
            [(CALL, {'group': 'ok', 'tool': 'plain_tool', 'arguments': {}})],
            'first',
            [(CALL, {'group': 'other', 'tool': 'plain_tool', 'arguments': {}})],
            'second',
        ]
    )
    proxy = ToolProxyCapability.from_mcp_config(path)
    agent = Agent(script.model, capabilities=[proxy])
    # `run_sync` runs on the thread's current event loop (creating one if none): give it one to close after.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        first = agent.run_sync('x')
        asyncio.set_event_loop(None)
        assert len(alive(pids, wait=0)) == 2  # kept on the first loop for its next run
        second = asyncio.run(agent.run('y'))  # another loop, while the first is still open (what broke every server)
        assert len(started(pids)) == 4  # the second loop's own processes, stopped when asyncio.run ended its loop
        assert len(alive(pids, wait=0)) == 2
    finally:
        asyncio.set_event_loop(None)
        loop.run_until_complete(proxy.stop_mcp_servers())  # a host closing its own loop stops its servers first
        loop.close()
    for result, step in ((first, 0), (second, 2)):
        assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
        assert group_enum(script, step) == ['ok', 'other']
    assert len(started(pids)) == 4 and alive(pids) == []


def test_a_process_that_ran_an_agent_exits_and_closes_its_output(tmp_path: Path, pids: Path) -> None:
    """What `subprocess.run(capture_output=True)` of a host script sees: it returns when the script is done (a
    leftover server would hold the pipe open, so the call would never return)."""
    path = write(tmp_path, {'ok': hostile(pids), 'silent': hostile(pids, '--on-list', 'hang')})
    script = tmp_path / 'host.py'
    script.write_text(
        'import sys\n'
        f'sys.path.insert(0, {str(ROOT / "tests")!r})\n'
        'from pydantic_ai import Agent\n'
        'from support import Script\n'
        'from pydantic_ai_toolproxy import ToolProxyCapability\n'
        f'agent = Agent(Script(["done"]).model, capabilities=[ToolProxyCapability.from_mcp_config({str(path)!r})])\n'
        'print(agent.run_sync("x").output)\n'
    )
    began = time.monotonic()
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == 'done'
    assert time.monotonic() - began < 60
    assert len(started(pids)) == 2 and alive(pids) == []


def test_cli_commands_end_with_silent_servers_and_no_server_left(tmp_path: Path, pids: Path) -> None:
    path = write(
        tmp_path,
        {
            'ok': hostile(pids),
            'silent_list': {**hostile(pids, '--on-list', 'hang'), 'startup_timeout_sec': 2},
            'silent_init': {**hostile(pids, '--on-initialize', 'hang'), 'startup_timeout_sec': 2},
        },
    )
    inspect = toolproxy('--mcp-config', str(path), 'inspect', '--json')
    assert inspect.returncode == 0, inspect.stderr
    assert [g['name'] for g in json.loads(inspect.stdout)['groups']] == ['ok']
    assert alive(pids) == []
    check = toolproxy('--mcp-config', str(path), 'check', '--json')
    assert check.returncode == 1
    kinds = [(p['kind'], p['group']) for p in json.loads(check.stdout)['problems'] if p['kind'] == 'server-start']
    assert kinds == [('server-start', 'silent_list'), ('server-start', 'silent_init')]
    assert len(started(pids)) == 6 and alive(pids) == []


def test_cli_quotes_a_failed_servers_stderr_and_keeps_the_rest_off_its_output(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'ok': hostile(pids), 'crash': hostile(pids, '--on-initialize', 'crash')})
    check = toolproxy('--mcp-config', str(path), 'check', '--json')
    [finding] = [p for p in json.loads(check.stdout)['problems'] if p['kind'] == 'server-start']
    assert finding['group'] == 'crash'
    assert 'certificate verify failed (hostile test)' in finding['message']
    # the server's stderr reaches the command's output only as that bounded quote
    assert 'starting the hostile server' not in check.stderr
    logs = tmp_path / 'logs'
    kept = toolproxy('--mcp-config', str(path), '--server-log', str(logs), 'inspect')
    assert kept.returncode == 0, kept.stderr
    assert 'certificate verify failed (hostile test)' in kept.stderr  # the warning's quote
    assert 'starting the hostile server' in (logs / 'crash.log').read_text()
    assert alive(pids) == []
