"""MCP servers kept across runs (`mcp_servers.pool`): real `Agent` runs over real stdio servers (tests/hostile_mcp_server.py
with `--pid-file`), counted by PID.

- the second and third runs of an agent on one event loop start no server, eager and lazy, with and without
  `async with agent:`; concurrent runs share one process per server;
- a server stops when idle past `idle_timeout`, when its event loop ends (`asyncio.run` returns), and at interpreter
  exit, also on SIGTERM (checked by PID from a host process);
- starts wait for a slot and each start's deadline counts from its slot; an entry's `startup_timeout_sec` sets it,
  and a timeout is reported as one, with the seconds and the setting;
- a server that did not start costs only the run that found it; a lazy server whose start failed keeps its group.

`pids` (the fixture) and `write` are test_mcp_lifetime's.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from support import CALL, SEARCH, Script, last_return, page_of, toolproxy
from test_mcp_lifetime import alive, group_enum, started, write
from test_mcp_lifetime import pids as pids  # the fixture, shared

from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.mcp_servers import lifetime
from pydantic_ai_toolproxy.mcp_servers import pool as _mcp_pool

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = str(ROOT / 'tests' / 'hostile_mcp_server.py')


def server(pids: Path, *extra: str, **keys: Any) -> dict[str, Any]:
    return {'command': sys.executable, 'args': [HOSTILE, '--pid-file', str(pids), *extra], **keys}


def call(group: str) -> Script:
    return Script([[(CALL, {'group': group, 'tool': 'plain_tool', 'arguments': {}})], 'done'])


def running(pids: Path) -> list[int]:
    return alive(pids, wait=0)


@pytest.mark.parametrize('lazy', [False, True], ids=['eager', 'lazy'])
@pytest.mark.parametrize('held', [False, True], ids=['runs', 'async-with-agent'])
def test_later_runs_on_one_loop_start_no_server(tmp_path: Path, pids: Path, lazy: bool, held: bool) -> None:
    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=lazy, listing_cache=tmp_path / 'listings.sqlite')

    async def three_runs() -> list[int]:
        agent = Agent(call('a').model, capabilities=[proxy])
        counts = []
        if held:
            async with agent:
                for _ in range(3):
                    result = await agent.run('x', model=call('a').model)
                    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
                    counts.append(len(started(pids)))
        else:
            for _ in range(3):
                result = await agent.run('x', model=call('a').model)
                assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
                counts.append(len(started(pids)))
        assert len(running(pids)) == counts[-1]  # kept up between runs
        return counts

    if lazy:  # a first process fills the listing cache; the lazy process below starts only what a call needs
        asyncio.run(three_runs())
        assert alive(pids) == []  # the loop ended: its servers stopped
        pids.unlink()
    counts = asyncio.run(three_runs())
    first = 1 if lazy else 2  # lazy with a fresh listing: only the called server starts
    assert counts == [first, first, first]
    assert alive(pids) == []  # asyncio.run ended the loop: every server stopped


async def test_concurrent_runs_share_one_process_per_server(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids, '--start-delay', '0.5'), 'b': server(pids)})
    agent = Agent(call('a').model, capabilities=[ToolProxyCapability.from_mcp_config(path, listing_cache=None)])
    results = await asyncio.gather(*(agent.run('x', model=call('a').model) for _ in range(4)))
    assert [last_return(r.all_messages(), CALL).content for r in results] == ['ran plain_tool'] * 4
    assert len(started(pids)) == 2


async def test_an_idle_server_stops_after_idle_timeout(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids)})
    agent = Agent(call('a').model, capabilities=[ToolProxyCapability.from_mcp_config(path, idle_timeout=0.5)])
    await agent.run('x', model=call('a').model)
    assert len(running(pids)) == 1
    deadline = time.monotonic() + 10
    while running(pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # the loop runs: the idle timer fires
    assert running(pids) == []
    await agent.run('x', model=call('a').model)  # a later run starts it again
    assert len(started(pids)) == 2


HOST = """
import asyncio, sys, time
sys.path.insert(0, {tests!r})
from pydantic_ai import Agent
from support import CALL, Script
from pydantic_ai_toolproxy import ToolProxyCapability

def call():
    return Script([[(CALL, {{'group': 'a', 'tool': 'plain_tool', 'arguments': {{}}}})], 'done']).model

agent = Agent(call(), capabilities=[ToolProxyCapability.from_mcp_config({path!r})])
mode = sys.argv[1]
if mode == 'two-loops':  # run_sync keeps its loop open; asyncio.run makes another: one process per server per loop
    agent.run_sync('x', model=call())
    agent.run_sync('x', model=call())
    asyncio.run(agent.run('y', model=call()))
    print('ran', flush=True)
else:
    agent.run_sync('x', model=call())
    print('ran', flush=True)
    time.sleep(60)
"""


def host(tmp_path: Path, path: Path) -> Path:
    script = tmp_path / 'host.py'
    script.write_text(HOST.format(tests=str(ROOT / 'tests'), path=str(path)))
    return script


def test_servers_of_an_open_loop_stop_at_exit_and_each_loop_has_its_own(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    proc = subprocess.run(
        [sys.executable, str(host(tmp_path, path)), 'two-loops'], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == 'ran'
    assert len(started(pids)) == 4  # two run_sync runs on one loop: 2; asyncio.run's loop: 2 more
    assert alive(pids) == []


def test_sigterm_stops_every_server(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    command = [sys.executable, str(host(tmp_path, path)), 'sleep']
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == 'ran'
            assert len(running(pids)) == 2  # kept after the run, while the host lives
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        finally:
            proc.kill()
    assert len(started(pids)) == 2 and alive(pids) == []


async def test_start_deadlines_count_from_each_servers_slot(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One slot, three servers of 1 s each and a 1.8 s timeout: one after another they take 3 s in all, and each
    keeps its own 1.8 s, so none is lost (a deadline counted from the run's start would lose two)."""
    monkeypatch.setattr(_mcp_pool, 'start_slots', lambda: 1)
    servers = {name: server(pids, '--start-delay', '1') for name in ('a', 'b', 'c')}
    proxy = ToolProxyCapability.from_mcp_config(write(tmp_path, servers), start_timeout=1.8, listing_cache=None)
    script = Script([[(SEARCH, {'query': 'plain'})], 'done'])
    await Agent(script.model, capabilities=[proxy]).run('x')
    assert group_enum(script) == ['a', 'b', 'c']


async def test_a_start_timeout_is_reported_as_one_with_its_setting(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(
        tmp_path,
        {'ok': server(pids), 'slow': server(pids, '--on-initialize', 'hang', startup_timeout_sec=1)},
    )
    script = Script([[(SEARCH, {'query': 'plain'})], 'done'])
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        await Agent(script.model, capabilities=[ToolProxyCapability.from_mcp_config(path, listing_cache=None)]).run('x')
    assert group_enum(script) == ['ok']
    [warning] = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert (
        "MCP server 'slow' did not start (StartTimeout: no answer to initialize within the start timeout of 1 s"
        in warning
    )
    assert 'startup_timeout_sec' in warning and 'start_timeout' in warning


def test_an_entry_start_timeout_must_be_a_positive_number(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'bad': server(pids, startup_timeout_ms='soon')})
    with pytest.raises(ValueError, match="startup_timeout_ms of MCP server 'bad'"):
        ToolProxyCapability.from_mcp_config(path)
    with pytest.raises(ValueError, match='idle_timeout'):
        ToolProxyCapability.from_mcp_config(write(tmp_path, {'a': server(pids)}), idle_timeout=0)


async def test_a_failed_server_costs_only_the_run_that_found_it(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, {'ok': server(pids), 'dead': server(pids, '--on-initialize', 'crash')})
    agent = Agent(call('ok').model, capabilities=[ToolProxyCapability.from_mcp_config(path, listing_cache=None)])
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        for _ in range(3):
            script = Script([[(SEARCH, {'query': 'plain'})], 'done'])
            await agent.run('x', model=script.model)
            assert group_enum(script) == ['ok']
    assert len(started(pids)) == 2  # the dead entry was started by the first run only
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1, warnings  # one warning per failure, not per run
    assert 'it is tried again in the background in 30 s' in warnings[0]


async def test_a_lazy_server_whose_start_fails_keeps_its_group(tmp_path: Path, pids: Path) -> None:
    """A lazy server with a fresh cached listing whose start fails at a call: the call gets a retry, and the group
    stays (search still finds its tools) for the rest of the run (it was "Unknown group")."""
    version = tmp_path / 'version'
    version.write_text('1')
    entry = server(pids, '--version-file', str(version))
    path = write(tmp_path, {'flaky': entry, 'ok': server(pids)})
    cache = tmp_path / 'listings.sqlite'
    filler = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[filler]).run('fill the cache')
    await filler.stop_mcp_servers()  # the next start of 'flaky' is the crashing one
    version.write_text('crash')
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=cache)
    script = Script(
        [
            [(CALL, {'group': 'flaky', 'tool': 'plain_tool', 'arguments': {}})],
            [(SEARCH, {'query': 'plain', 'group': 'flaky'})],
            'done',
        ]
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert 'could not be started' in str(last_return(result.all_messages(), CALL).content)
    assert group_enum(script, 1) == ['flaky', 'ok']  # the group stays
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['tool'] == 'plain_tool'


def test_a_capability_built_per_request_shares_the_running_servers(tmp_path: Path, pids: Path) -> None:
    """A web app that builds `from_mcp_config` in each request handler: the capabilities share one process per
    server (they do not each start, and keep, their own), and a capability gone with its request leaves nothing
    running once the loop ends."""
    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})

    async def requests() -> None:
        for _ in range(3):
            proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=None)
            result = await Agent(call('a').model, capabilities=[proxy]).run('x')
            assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
            del proxy, result
            gc.collect()
        assert len(started(pids)) == 2 and len(running(pids)) == 2

    asyncio.run(requests())
    assert alive(pids) == []


def test_the_cli_sets_the_start_timeout_and_check_says_how_to_raise_it(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'ok': server(pids), 'slow': server(pids, '--on-initialize', 'hang')})
    check = toolproxy('--mcp-config', str(path), '--listing-cache', 'off', '--start-timeout', '1', 'check', '--json')
    assert check.returncode == 1, check.stderr
    [problem] = [p for p in json.loads(check.stdout)['problems'] if p['kind'] == 'server-start']
    assert problem['group'] == 'slow'
    assert 'no answer to initialize within the start timeout of 1 s' in problem['message']
    assert 'startup_timeout_sec' in problem['fix'] and '--start-timeout' in problem['fix']
    bad = toolproxy('--mcp-config', str(path), '--start-timeout', '0', 'inspect')
    assert bad.returncode == 2 and 'must be a positive number of seconds' in bad.stderr
    assert alive(pids) == []


async def test_a_server_that_died_between_runs_is_started_again(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids)})
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=None)
    agent = Agent(call('a').model, capabilities=[proxy])
    await agent.run('x', model=call('a').model)
    [pid] = running(pids)
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):  # reaped by the event loop's child watcher (on 3.13 only while the loop runs)
        if not running(pids):
            break
        await asyncio.sleep(0.05)
    for _ in range(2):
        result = await agent.run('x', model=call('a').model)
        assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
    assert len(started(pids)) == 2  # one new process for both later runs
    await proxy.stop_mcp_servers()


def test_a_failure_is_remembered_by_every_event_loop_and_loops_are_not_kept(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'ok': server(pids), 'dead': server(pids, '--on-initialize', 'crash')})
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=None)
    for _ in range(4):  # each asyncio.run is a new event loop
        asyncio.run(Agent(call('ok').model, capabilities=[proxy]).run('x'))
    assert len(started(pids)) == 4 + 1  # 'ok' once per loop, 'dead' only by the first
    pool = proxy.groups['dead'].source.pool  # type: ignore[union-attr]
    assert len(pool._by_loop) <= 1  # closed loops are forgotten, not kept alive by their servers
    assert alive(pids) == []


async def test_calling_a_lazy_server_that_cannot_start_twice_spends_no_retry(tmp_path: Path, pids: Path) -> None:
    version = tmp_path / 'version'
    version.write_text('1')
    path = write(tmp_path, {'flaky': server(pids, '--version-file', str(version))})
    cache = tmp_path / 'listings.sqlite'
    filler = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[filler]).run('fill the cache')
    await filler.stop_mcp_servers()
    version.write_text('crash')
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=cache)
    twice = [(CALL, {'group': 'flaky', 'tool': 'plain_tool', 'arguments': {}})]
    script = Script([twice, twice, twice, 'done'])  # Pydantic AI's default: 1 retry per tool
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert result.output == 'done'
    texts = [
        str(p.content) for m in result.all_messages() for p in getattr(m, 'parts', ()) if p.part_kind == 'tool-return'
    ]
    assert len(texts) == 3 and all('could not be started' in t for t in texts)
    await proxy.stop_mcp_servers()


def test_a_retry_that_fires_late_is_waited_for_by_the_run_that_fires_it(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop that runs only during runs (as `run_sync`'s between runs) fires the background retry as the next run
    begins: that run waits for it as for its own start and gets the group back (not a run later)."""
    monkeypatch.setattr(_mcp_pool, 'RETRY_AFTER', 1.0)
    version = tmp_path / 'version'
    version.write_text('crash')
    path = write(tmp_path, {'flaky': server(pids, '--version-file', str(version)), 'ok': server(pids)})
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=None)
    agent = Agent(call('ok').model, capabilities=[proxy])
    loop = asyncio.new_event_loop()  # run_sync's way, without leaving the loop to the test process
    try:
        first = call('flaky')
        loop.run_until_complete(agent.run('x', model=first.model))
        assert group_enum(first) == ['ok']
        version.write_text('1')  # the server is mended
        time.sleep(1.0 + _mcp_pool.LATE_RETRY + 0.5)  # the back-off is over; the loop did not run meanwhile
        second = call('flaky')
        result = loop.run_until_complete(agent.run('x', model=second.model))
        assert group_enum(second) == ['flaky', 'ok']
        assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
    finally:
        loop.run_until_complete(proxy.stop_mcp_servers())
        loop.close()
    assert alive(pids) == []


def test_the_watcher_survives_servers_added_and_removed_by_other_threads() -> None:
    """Other threads' loops add and drop servers while the watcher copies the set of live ones: a sweep never
    raises (an exception would end the watcher thread)."""

    class Stopped:  # a server the watcher already stopped: a sweep reads only `killed` of it
        killed = True

    kept = [Stopped() for _ in range(64)]
    done = False

    def churn() -> None:
        while not done:
            for server in kept:
                lifetime.LIVE.add(server)  # type: ignore[arg-type]
            for server in kept:
                lifetime.LIVE.discard(server)  # type: ignore[arg-type]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = [threading.Thread(target=churn) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            lifetime.sweep()
    finally:
        done = True
        for thread in threads:
            thread.join()
        sys.setswitchinterval(interval)
