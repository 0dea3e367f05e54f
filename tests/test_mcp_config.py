"""`ToolProxyCapability.from_mcp_config`: an `mcpServers` file behind the proxy, with real stdio MCP servers.

The servers are examples/mcp_server.py (notes and weather) and tests/hostile_mcp_server.py (hand-written JSON-RPC),
started by Pydantic AI's `load_mcp_toolsets` from a file written per test. A server that does not start is the
example server with `--fail-startup` (it exits with status 1 before speaking MCP) or a missing executable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from support import CALL, SEARCH, Script, last_return, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, _core
from pydantic_ai_toolproxy.grouping.names import group_ids
from pydantic_ai_toolproxy.mcp_servers.config import default_description, group_id

ROOT = Path(__file__).resolve().parent.parent
NOTES = str(ROOT / 'examples' / 'mcp_server.py')
HOSTILE = str(ROOT / 'tests' / 'hostile_mcp_server.py')


def notes(*extra: str) -> dict[str, Any]:
    return {'command': sys.executable, 'args': [NOTES, '--no-test-tools', *extra]}


def write(tmp_path: Path, servers: dict[str, Any], name: str = 'mcp.json') -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({'mcpServers': servers}), encoding='utf-8')
    return path


def group_enum(script: Script, step: int = 0) -> list[str]:
    schema = script.tool_def(SEARCH, step).parameters_json_schema
    group = schema['properties']['group']
    return next(option['enum'] for option in group['anyOf'] if 'enum' in option)


async def test_each_server_is_a_group_with_its_own_tool_names(tmp_path: Path) -> None:
    path = write(tmp_path, {'notes server': notes(), 'hostile': {'command': sys.executable, 'args': [HOSTILE]}})
    proxy = ToolProxyCapability.from_mcp_config(path, descriptions={'hostile': 'Hand-written hostile tools'})
    assert list(proxy.groups) == ['notes_server', 'hostile']
    assert proxy.groups['notes_server'].description == 'Tools of the MCP server "notes server"'
    assert proxy.groups['hostile'].description == 'Hand-written hostile tools'
    script = Script(
        [
            [(SEARCH, {'query': 'convert temperature', 'group': 'notes_server'})],
            [
                (
                    CALL,
                    {
                        'group': 'notes_server',
                        'tool': 'convert_temperature',
                        'arguments': {'value': 100, 'from_unit': 'celsius', 'to_unit': 'fahrenheit'},
                    },
                )
            ],
            [(CALL, {'group': 'hostile', 'tool': 'plain_tool', 'arguments': {}})],
            'done',
        ]
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert script.offered(0) == [SEARCH, CALL]
    assert group_enum(script) == ['notes_server', 'hostile']
    page = page_of(last_return(result.all_messages(), SEARCH))
    # The server's own names: not Pydantic AI's per-server prefix (`notes server_convert_temperature`).
    assert page['tools'][0]['tool'] == 'convert_temperature'
    assert page['tools'][0]['group'] == 'notes_server'
    calls = [p.content for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert calls[0] == 212.0
    assert calls[1] == 'ran plain_tool'


async def test_env_vars_in_the_file_are_expanded_by_pydantic_ai(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv('TOOLPROXY_TEST_NOTES', NOTES)
    path = write(
        tmp_path,
        {
            'notes': {
                'command': sys.executable,
                'args': ['${TOOLPROXY_TEST_NOTES}', '${TOOLPROXY_UNSET_FLAG:---no-test-tools}'],
            }
        },
    )
    proxy = ToolProxyCapability.from_mcp_config(path)
    script = Script([[(SEARCH, {'query': '', 'group': 'notes', 'limit': 10})], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    names = [entry['tool'] for entry in page_of(last_return(result.all_messages(), SEARCH))['tools']]
    assert 'add_note' in names and 'fail' not in names  # the default `--no-test-tools` was passed

    monkeypatch.delenv('TOOLPROXY_TEST_NOTES')
    with pytest.raises(ValueError, match=r'mcp\.json.*TOOLPROXY_TEST_NOTES\} is not defined'):
        ToolProxyCapability.from_mcp_config(path)


@pytest.mark.parametrize(
    'broken',
    [
        pytest.param(notes('--fail-startup'), id='exits-at-startup'),
        pytest.param({'command': str(ROOT / 'no-such-server-binary')}, id='missing-executable'),
        # Silent past its start timeout (the entry's own key, as other MCP clients' files set it).
        pytest.param({**notes('--startup-delay', '60'), 'startup_timeout_sec': 3}, id='hangs-at-startup'),
    ],
)
async def test_a_server_that_does_not_start_leaves_the_others_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: dict[str, Any]
) -> None:
    path = write(tmp_path, {'broken one': broken, 'notes': notes()})
    proxy = ToolProxyCapability.from_mcp_config(path)  # nothing starts at construction
    assert list(proxy.groups) == ['broken_one', 'notes']
    script = Script(
        [
            [(CALL, {'group': 'broken_one', 'tool': 'list_notes', 'arguments': {}})],
            [(CALL, {'group': 'notes', 'tool': 'add_note', 'arguments': {'title': 't', 'body': 'b'}})],
            'done',
        ]
    )
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1
    assert warnings[0].startswith("MCP server 'broken one' did not start (")
    assert "group 'broken_one' is left out of this run" in warnings[0]
    assert group_enum(script) == ['notes']
    assert 'broken_one' not in (script.tool_def(SEARCH).description or '')
    first, second = [p.model_response_str() for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert "Unknown group 'broken_one'. Current groups: notes." in first
    assert '"title":"t"' in second.replace(' ', '')


def hostile(*extra: str) -> dict[str, Any]:
    return {'command': sys.executable, 'args': [HOSTILE, *extra]}


@pytest.mark.parametrize(
    'broken',
    [
        # A listing the MCP SDK rejects (a tool whose name is a number): a ValidationError.
        pytest.param(hostile('--bad-name'), id='invalid-listing'),
        pytest.param(hostile('--on-list', 'exit'), id='exits-at-listing'),
        # Initialized, then silent at `tools/list`: bounded like the start, not Pydantic AI's 300 s `read_timeout`.
        pytest.param({**hostile('--on-list', 'hang'), 'startup_timeout_sec': 3}, id='hangs-at-listing'),
    ],
)
async def test_a_server_whose_tool_listing_fails_leaves_the_others_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: dict[str, Any]
) -> None:
    import time

    path = write(tmp_path, {'broken': broken, 'notes': notes()})
    proxy = ToolProxyCapability.from_mcp_config(path)
    script = Script(
        [[(CALL, {'group': 'notes', 'tool': 'add_note', 'arguments': {'title': 't', 'body': 'b'}})], 'done']
    )
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert time.monotonic() - started < 60
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and warnings[0].startswith("MCP server 'broken' did not start (")
    assert "group 'broken' is left out of this run" in warnings[0]
    assert group_enum(script) == ['notes']
    assert '"title":"t"' in last_return(result.all_messages(), CALL).model_response_str().replace(' ', '')
    pool = proxy.groups['broken'].source.pool  # type: ignore[union-attr]
    assert pool.current().state == 'failed'  # the failed start was undone (nothing entered, no process kept)


async def test_a_run_cancelled_while_a_server_lists_its_tools_stops_the_server(tmp_path: Path) -> None:
    import asyncio

    path = write(tmp_path, {'silent': hostile('--on-list', 'hang'), 'notes': notes()})
    proxy = ToolProxyCapability.from_mcp_config(path)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(Agent(Script(['done']).model, capabilities=[proxy]).run('x'), timeout=2)
    # the starts go on in their keepers (for the next run), bounded by their own timeout; stopping them ends both
    await proxy.stop_mcp_servers()
    for group in ('silent', 'notes'):
        assert proxy.groups[group].source.pool.current().state in ('stopped', 'failed'), group  # type: ignore[union-attr]


async def test_a_server_whose_listing_fails_later_is_left_out_of_the_rest_of_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Answers the one listing of a start (its answer also fills the run's MCPToolset cache), announces a change at
    # its first call, and exits when the run lists again.
    flaky = hostile('--on-list', 'exit', '--lists-before-fail', '1', '--list-changed-on-call')
    path = write(tmp_path, {'flaky': flaky, 'notes': notes()})
    proxy = ToolProxyCapability.from_mcp_config(path)
    script = Script(
        [
            [(CALL, {'group': 'flaky', 'tool': 'plain_tool', 'arguments': {}})],
            [(CALL, {'group': 'notes', 'tool': 'add_note', 'arguments': {'title': 't', 'body': 'b'}})],
            [(CALL, {'group': 'flaky', 'tool': 'plain_tool', 'arguments': {}})],
            'done',
        ]
    )
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert group_enum(script, 0) == ['flaky', 'notes']
    assert group_enum(script, 1) == group_enum(script, 3) == ['notes']
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1
    assert warnings[0].startswith("MCP server 'flaky' failed to list its tools (")
    assert "group 'flaky' is left out of the rest of this run" in warnings[0]
    calls = [p.model_response_str() for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert calls[0] == 'ran plain_tool'
    assert '"title":"t"' in calls[1].replace(' ', '')
    assert "Unknown group 'flaky'. Current groups: notes." in calls[2]


async def test_a_server_that_failed_is_started_again_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run that found the failure pays for it; the pool retries it in the background after the back-off (here
    0.2 s), and a later run finds it up without starting it."""
    from pydantic_ai_toolproxy.mcp_servers import pool as _mcp_pool

    monkeypatch.setattr(_mcp_pool, 'RETRY_AFTER', 0.2)
    ready = tmp_path / 'ready'
    starter = (
        'import os, runpy, sys\n'
        f'if not os.path.exists({str(ready)!r}): sys.exit(1)\n'
        f'sys.argv = [{NOTES!r}, "--no-test-tools"]\n'
        f'runpy.run_path({NOTES!r}, run_name="__main__")\n'
    )
    path = write(tmp_path, {'late': {'command': sys.executable, 'args': ['-c', starter]}, 'notes': notes()})
    proxy = ToolProxyCapability.from_mcp_config(path)
    first = Script(['done'])
    await Agent(first.model, capabilities=[proxy]).run('x')
    assert group_enum(first) == ['notes']
    ready.write_text('')
    pool = proxy.groups['late'].source.pool  # type: ignore[union-attr]
    for _ in range(200):  # the background retry: after 0.2 s, then the start itself
        if pool.current().state == 'up':
            break
        await asyncio.sleep(0.05)
    second = Script(['done'])
    await Agent(second.model, capabilities=[proxy]).run('x')
    assert group_enum(second) == ['late', 'notes']
    await proxy.stop_mcp_servers()


async def test_servers_stay_up_across_runs_inside_async_with_agent(tmp_path: Path) -> None:
    path = write(tmp_path, {'notes': notes()})
    script = Script(
        [
            [(CALL, {'group': 'notes', 'tool': 'add_note', 'arguments': {'title': 'kept', 'body': 'b'}})],
            'done',
            [(CALL, {'group': 'notes', 'tool': 'list_notes', 'arguments': {}})],
            'done',
        ]
    )
    agent = Agent(script.model, capabilities=[ToolProxyCapability.from_mcp_config(path)])
    async with agent:
        await agent.run('x')
        second = await agent.run('x')
    listed = last_return(second.all_messages(), CALL).model_response_str()
    assert 'kept' in listed  # one server process served both runs (its notes live in memory)


def test_group_id_rule() -> None:
    assert group_id('github') == 'github'
    assert group_id('Git-Hub_2') == 'Git-Hub_2'
    assert group_id('@acme/server-files') == 'acme_server-files'
    assert group_id('my server.v2') == 'my_server_v2'
    assert group_id('a__b') == 'a_b'
    assert group_id('__private__') == 'private'
    assert group_id('1password') == 'mcp_1password'
    assert group_id('-x-') == 'x'
    assert group_id('café') == 'caf'
    for hopeless in ('', '...', '日本語', '__', '-'):  # nothing usable: `mcp_` and a hash of the name
        gid = group_id(hopeless)
        assert re.fullmatch(r'mcp_[0-9a-f]{6}', gid) and gid == group_id(hopeless)
    assert len({group_id(h) for h in ('', '...', '日本語', '__', '-')}) == 5
    long = 'awslabs.aws-documentation-mcp-server'
    assert group_id(long) == 'awslabs_aws-documentation_c94c58' == group_id(long)  # 36 -> 32 characters
    assert group_id('x' * 40) == 'x' * 25 + '_' + group_id('x' * 40)[-6:]
    assert group_id('x' * 40) != group_id('x' * 41)
    assert default_description('my server') == 'Tools of the MCP server "my server"'


def name_sets() -> list[list[str]]:
    """Sets of server names that collide, are long, empty, dotted or not ASCII (seeded: the same every run)."""
    rng = random.Random(35)
    parts = ['a', 'my', 'server', ' ', '.', '_', '-', '__', '1', 'x' * 30, '日本', '@acme/', 'mcp', '']
    sets = [
        ['my server', 'my_server', 'my.server', 'my__server', 'My Server'],
        ['', ' ', '.', '日本語', '-'],
        ['x' * 40],
    ]
    for _ in range(300):
        sets.append(list(dict.fromkeys(''.join(rng.choices(parts, k=rng.randint(1, 5))) for _ in range(8))))
    return sets


@pytest.mark.parametrize('names', name_sets())
def test_group_ids_are_valid_distinct_and_independent_of_order(names: list[str]) -> None:
    ids = group_ids(names)
    assert list(ids) == names and len(set(ids.values())) == len(names)
    for gid in ids.values():
        _core.validate_group_name(gid)
        assert len(gid) <= 32 and '__' not in gid
    assert group_ids(reversed(names)) == ids
    for name, gid in ids.items():
        if group_id(name) == name:  # a name that is a valid group id keeps it
            assert gid == name
        elif sum(group_id(other) == group_id(name) for other in names) == 1:  # no collision: `group_id`
            assert gid == group_id(name)


def test_group_id_is_the_same_in_another_process() -> None:
    code = 'from pydantic_ai_toolproxy.grouping.names import group_id; print(group_id("awslabs.aws-documentation-mcp-server"))'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == group_id('awslabs.aws-documentation-mcp-server')


async def test_any_server_name_becomes_a_group(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            'my server': notes(),
            'my_server': notes(),
            'my.server': notes(),
            'awslabs.aws-documentation-mcp-server': notes(),
            '日本語': notes(),
        },
    )
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=None)
    hashed = group_id('awslabs.aws-documentation-mcp-server')
    assert list(proxy.groups)[1] == 'my_server'  # the name that is its own id keeps it
    assert list(proxy.groups)[3] == hashed and len(set(proxy.groups)) == 5
    assert list(proxy.groups)[4] == group_id('日本語')
    script = Script([[(SEARCH, {'query': 'convert temperature', 'group': hashed})], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert sorted(group_enum(script)) == sorted(proxy.groups)
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['group'] == hashed


def test_descriptions_and_config_are_checked(tmp_path: Path) -> None:
    path = write(tmp_path, {'notes': notes()})
    with pytest.raises(
        ValueError, match=r"descriptions name 'note', which is not a server of .*\(its servers: 'notes'\)"
    ):
        ToolProxyCapability.from_mcp_config(path, descriptions={'note': 'typo'})
    with pytest.raises(ValueError, match="group 'notes'"):
        ToolProxyCapability.from_mcp_config(path, descriptions={'notes': '  '})
    with pytest.raises(TypeError, match='descriptions must be a mapping'):
        ToolProxyCapability.from_mcp_config(path, descriptions={'notes': 3})  # type: ignore[dict-item]
    proxy = ToolProxyCapability.from_mcp_config(path, config=ToolProxyConfig(search_name='find'))
    assert proxy.config.search_name == 'find'


def test_file_problems_are_pydantic_ais_with_the_file_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ToolProxyCapability.from_mcp_config(tmp_path / 'missing.json')
    bad = tmp_path / 'bad.json'
    bad.write_text('{"mcpServers": {"x": {"args": []}}}')
    with pytest.raises(ValueError, match=r"bad\.json.*'x' must have either `command` or `url`"):
        ToolProxyCapability.from_mcp_config(bad)
    bad.write_text('{"servers": {}}')
    with pytest.raises(ValueError, match=r'(?s)bad\.json.*mcpServers.*Field required'):
        ToolProxyCapability.from_mcp_config(bad)


async def test_concurrent_runs_share_the_servers_and_each_leaves_the_failing_one_out(tmp_path: Path) -> None:
    import asyncio

    path = write(tmp_path, {'broken': notes('--fail-startup'), 'notes': notes()})
    proxy = ToolProxyCapability.from_mcp_config(path)
    scripts = [
        Script([[(CALL, {'group': 'notes', 'tool': 'convert_temperature', 'arguments': arguments})], 'done'])
        for arguments in (
            {'value': 0, 'from_unit': 'celsius', 'to_unit': 'kelvin'},
            {'value': 32, 'from_unit': 'fahrenheit', 'to_unit': 'celsius'},
        )
    ]
    pool = proxy.groups['notes'].source.pool  # type: ignore[union-attr]  # process-wide: other tests used it too
    before = pool.starts
    results = await asyncio.gather(*(Agent(s.model, capabilities=[proxy]).run('x') for s in scripts))
    assert [last_return(r.all_messages(), CALL).content for r in results] == [273.15, 0.0]
    assert [group_enum(s) for s in scripts] == [['notes'], ['notes']]
    # Both runs ended: they shared one notes process, kept for the next run, and released it (leases in pairs).
    assert pool.starts - before == 1 and pool.current().users == 0
    assert await proxy.stop_mcp_servers() == 1
