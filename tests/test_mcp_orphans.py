"""Servers of an event loop that no longer runs (`mcp_servers.pool`'s watcher), checked by PID from a host process that
stays alive: they stop within `idle_timeout` (plus the watcher's second and the SIGTERM grace), where their own idle
timer cannot fire, and at once when their loop was closed by hand.

- a thread that ran `run_sync` and ended;
- a `run_sync` loop that `asyncio.run` in the same thread replaced;
- a loop closed by hand (`loop.close()` after `run_until_complete`), without asyncio's "Loop ... that handles pid
  ... is closed" on the host's stderr.
And a server a later `run_sync` finds stopped this way is started again (the run gets its tool).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_mcp_lifetime import alive, started, write
from test_mcp_lifetime import pids as pids  # the fixture, shared
from test_mcp_pool import server

ROOT = Path(__file__).resolve().parent.parent

IDLE = 1.0

HOST = """
import asyncio, sys, threading, time
sys.path.insert(0, {tests!r})
from pydantic_ai import Agent
from support import CALL, SEARCH, Script, last_return
from pydantic_ai_toolproxy import ToolProxyCapability

def call():
    return Script([[(CALL, {{'group': 'a', 'tool': 'plain_tool', 'arguments': {{}}}})], 'done']).model

agent = Agent(call(), capabilities=[ToolProxyCapability.from_mcp_config({path!r}, idle_timeout={idle!r})])
mode = sys.argv[1]
if mode == 'thread':
    thread = threading.Thread(target=lambda: agent.run_sync('x', model=call()))
    thread.start()
    thread.join()
elif mode in ('replaced', 'again'):
    agent.run_sync('x', model=call())
    asyncio.run(asyncio.sleep(0))
elif mode == 'closed':
    loop = asyncio.new_event_loop()
    loop.run_until_complete(agent.run('x', model=call()))
    loop.close()
elif mode == 'closed-twice':  # a worker that makes and closes a loop per job: the next job's run works
    for _ in range(2):
        loop = asyncio.new_event_loop()
        result = loop.run_until_complete(agent.run('x', model=call()))
        print(last_return(result.all_messages(), CALL).content, flush=True)
        loop.close()
    import gc
    gc.collect()  # the first loop's keepers are finalized while no loop of theirs runs
elif mode == 'starting':  # a loop left (not closed) while eager starts served from the cache are under way
    asyncio.run(agent.run('x', model=Script([[(SEARCH, {{'query': 'plain'}})], 'done']).model))  # fills the cache
    loop = asyncio.new_event_loop()
    loop.run_until_complete(agent.run('x', model=Script(['done']).model))
    loop.run_until_complete(asyncio.sleep(1.0))  # the processes are spawned; their start delay is not over
print('ran', flush=True)
if mode == 'again':  # once the watcher stopped it, the same loop runs again and gets a new server
    sys.stdin.readline()
    result = agent.run_sync('x', model=call())
    print(last_return(result.all_messages(), CALL).content, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize('mode', ['thread', 'replaced', 'closed', 'again'])
def test_servers_of_a_loop_that_no_longer_runs_are_stopped(tmp_path: Path, pids: Path, mode: str) -> None:
    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    script = tmp_path / 'host.py'
    script.write_text(HOST.format(tests=str(ROOT / 'tests'), path=str(path), idle=IDLE))
    command = [sys.executable, str(script), mode]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline().strip() == 'ran', proc.stderr.read() if proc.stderr else ''
            began = time.monotonic()
            first = started(pids)
            assert len(first) == 2
            assert alive(pids, wait=IDLE + 1 + 2 + 3) == []  # idle, the watcher's second, the grace, and slack
            assert time.monotonic() - began < IDLE + 6
            assert proc.poll() is None  # the host lives on: the watcher stopped them, not the host's exit
            if mode == 'again':
                proc.stdin.write('go\n')
                proc.stdin.flush()
                assert proc.stdout.readline().strip() == 'ran plain_tool'
                deadline = time.monotonic() + 10
                while len(started(pids)) < 4 and time.monotonic() < deadline:
                    time.sleep(0.05)  # the uncalled server starts in the background (its listing is cached)
                assert len(started(pids)) == 4  # both started again, on the same loop
        finally:
            proc.kill()
            proc.wait()
        said = proc.stderr.read() if proc.stderr else ''
    assert alive(pids) == []
    assert 'that handles pid' not in said  # asyncio's "Loop ... is closed" about a server stopped here: dropped


def test_loops_closed_by_hand_one_after_another(tmp_path: Path, pids: Path) -> None:
    """A loop closed by hand after each run (as a worker that makes a loop per job does): every run gets its tool,
    and a keeper of a closed loop, finalized while another loop runs, awaits nothing there (it once broke that
    loop's run with "Attempted to exit a cancel scope that isn't the current task's current cancel scope")."""
    path = write(tmp_path, {'a': server(pids)})
    script = tmp_path / 'host.py'
    script.write_text(HOST.format(tests=str(ROOT / 'tests'), path=str(path), idle=IDLE))
    with subprocess.Popen(
        [sys.executable, str(script), 'closed-twice'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = [proc.stdout.readline().strip() for _ in range(3)]
        finally:
            proc.kill()
            proc.wait()
        said = proc.stderr.read() if proc.stderr else ''
    assert lines == ['ran plain_tool', 'ran plain_tool', 'ran'], said
    assert 'cancel scope' not in said and 'LoopServer._keep' not in said, said
    assert alive(pids, wait=IDLE + 1 + 2 + 3) == []


def test_a_start_left_under_way_on_a_loop_that_does_not_run_is_stopped(tmp_path: Path, pids: Path) -> None:
    """An eager run serves fresh cached listings and starts the servers in the background; when its loop stops
    running before those starts end (`run_sync` returned), the spawned processes are stopped after `idle_timeout`
    too, and the stop is no failure of the server's."""
    path = write(tmp_path, {'a': server(pids, '--start-delay', '4'), 'b': server(pids, '--start-delay', '4')})
    script = tmp_path / 'host.py'
    script.write_text(HOST.format(tests=str(ROOT / 'tests'), path=str(path), idle=IDLE))
    with subprocess.Popen(
        [sys.executable, str(script), 'starting'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == 'ran', proc.stderr.read() if proc.stderr else ''
            assert len(started(pids)) == 4  # two by the first loop (stopped with it), two under way
            assert alive(pids, wait=IDLE + 1 + 2 + 3) == []
            assert proc.poll() is None  # stopped by the watcher, not by the host's exit
        finally:
            proc.kill()
            proc.wait()
        said = proc.stderr.read() if proc.stderr else ''
    assert 'did not start' not in said, said
