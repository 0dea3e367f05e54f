"""Eager MCP starts (`from_mcp_config` without `lazy`), with real stdio servers (tests/hostile_mcp_server.py with
`--pid-file` and `--methods-file`), counted by PID and by the requests each process read:

- a live start asks the server for its tools once (the pool's first `tools/list` also fills Pydantic AI's
  `MCPToolset` tools cache), eager and at a lazy call alike;
- with a cold listing cache the run's first model request waits for every server's listing;
- with a fresh cached listing it does not: the request is built from the cache (the same tools, byte for byte) while
  the pool starts every server in the background; a call waits for its server's start;
- a server whose background start fails keeps its group; its calls get a `ToolFailed`, with one warning.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from support import CALL, SEARCH, Script, last_return, returns
from test_mcp_lifetime import alive, group_enum, started, write
from test_mcp_lifetime import pids as pids  # the fixture, shared
from test_mcp_pool import server

from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.mcp_listing_cache import MemoryListingStore


def requests(methods: Path, method: str) -> Counter[int]:
    """How many `method` requests each server process read (by PID)."""
    lines = methods.read_text().splitlines() if methods.exists() else []
    return Counter(int(pid) for pid, said in (line.split() for line in lines) if said == method)


def request(script: Script) -> list[str]:
    """The tools of the first model request as JSON, without the id of the capability that made them."""
    return [
        json.dumps({**t.__dict__, 'capability_id': None}, sort_keys=True, default=str)
        for t in script.infos[0].function_tools
    ]


def call_a(when_asked: dict[str, Any], methods: Path, pids: Path) -> Script:
    """A call of `a`'s `plain_tool`; the first request notes what the servers had done by then."""

    def first(messages: Any, info: Any) -> list[tuple[str, dict[str, Any]]]:
        when_asked['listed'] = sum(requests(methods, 'tools/list').values())
        when_asked['started'] = len(started(pids))
        return [(CALL, {'group': 'a', 'tool': 'plain_tool', 'arguments': {}})]

    return Script([first, 'done'])


@pytest.mark.parametrize('lazy', [False, True], ids=['eager', 'lazy-call'])
async def test_a_live_start_lists_the_servers_tools_once(tmp_path: Path, pids: Path, lazy: bool) -> None:
    methods = tmp_path / 'methods'
    path = write(tmp_path, {'a': server(pids, '--methods-file', str(methods))})
    cache = tmp_path / 'listings.sqlite'
    if lazy:  # a first run fills the cache; the lazy run starts the server at its call
        filler = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
        await Agent(Script(['done']).model, capabilities=[filler]).run('fill')
        await filler.stop_mcp_servers()
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=lazy, listing_cache=cache)
    script = Script(
        [
            [(CALL, {'group': 'a', 'tool': 'plain_tool', 'arguments': {}})],
            [(SEARCH, {'query': 'plain', 'group': 'a'})],
            'done',
        ]
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
    await proxy.stop_mcp_servers()
    lists = requests(methods, 'tools/list')
    assert sorted(lists) == sorted(started(pids)) and set(lists.values()) == {1}, lists  # one per process
    assert alive(pids) == []


async def test_eager_waits_for_a_cold_cache_and_not_for_a_warm_one(tmp_path: Path, pids: Path) -> None:
    methods = tmp_path / 'methods'
    slow = server(pids, '--start-delay', '1.5', '--methods-file', str(methods))
    path = write(tmp_path, {'a': slow, 'b': slow})
    cache = MemoryListingStore()  # a slow file read on a loaded machine would count as a miss

    cold: dict[str, Any] = {}
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    cold_script = call_a(cold, methods, pids)
    result = await Agent(cold_script.model, capabilities=[proxy]).run('x')
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
    assert cold == {'listed': 2, 'started': 2}  # no cached listing: the first request waited for both servers
    await proxy.stop_mcp_servers()  # a fresh pool, as in a later process
    assert alive(pids) == []

    warm: dict[str, Any] = {}
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    warm_script = call_a(warm, methods, pids)
    result = await Agent(warm_script.model, capabilities=[proxy]).run('x')
    assert warm['listed'] == 2  # the model was asked before either new process answered a request
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'  # the call waited for a's start
    # the same request as the cold run's, byte for byte (its tools, their schemas and the groups)
    # the same request as the cold run's, byte for byte (tools, schemas, groups), but for the capability's own id
    assert request(warm_script) == request(cold_script)
    assert group_enum(warm_script) == group_enum(cold_script) == ['a', 'b']
    pool_b = proxy.groups['b'].source.pool  # type: ignore[union-attr]
    current = pool_b.current()
    assert current is not None and current.state in ('starting', 'up')  # b was started too, never called
    await current.wait_ready()
    assert len(started(pids)) == 4
    lists = requests(methods, 'tools/list')
    assert set(lists.values()) == {1}, lists
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_a_background_start_that_fails_keeps_the_group_and_its_calls_fail(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    version = tmp_path / 'version'
    version.write_text('1')
    path = write(tmp_path, {'flaky': server(pids, '--version-file', str(version)), 'ok': server(pids)})
    cache = MemoryListingStore()  # a slow file read on a loaded machine would count as a miss
    filler = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[filler]).run('fill the cache')
    await filler.stop_mcp_servers()
    version.write_text('crash')  # its next start fails
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    flaky = [(CALL, {'group': 'flaky', 'tool': 'plain_tool', 'arguments': {}})]
    script = Script([flaky, [(SEARCH, {'query': 'plain', 'group': 'flaky'})], flaky, 'done'])
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert result.output == 'done'
    assert group_enum(script, 0) == group_enum(script, 3) == ['flaky', 'ok']  # the group stays
    texts = [str(p.content) for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert len(texts) == 2 and all('could not be started' in t for t in texts), texts
    warned = [r.getMessage() for r in caplog.records if 'flaky' in r.getMessage()]
    assert len(warned) == 1, warned
    assert 'tried again in the background' in warned[0]
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_cached_tools_are_turned_into_tools_once_per_listing_entry(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic_ai.mcp import MCPToolset

    from pydantic_ai_toolproxy.mcp_servers import process as _mcp_server

    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    cache = MemoryListingStore()  # no file: a loaded machine's slow read would count as a miss and start a server
    filler = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[filler]).run('fill')
    await filler.stop_mcp_servers()
    converted: list[str] = []
    original = MCPToolset.get_tools

    async def counting(self: Any, ctx: Any) -> Any:
        if isinstance(self, _mcp_server._ListedFrom):
            converted.append(self.id)
        return await original(self, ctx)

    monkeypatch.setattr(MCPToolset, 'get_tools', counting)
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=cache)
    search = [(SEARCH, {'query': 'plain'})]
    first = Script([search, search, search, 'done'])
    await Agent(first.model, capabilities=[proxy]).run('x')
    second = Script([search, 'done'])
    await Agent(second.model, capabilities=[proxy]).run('y')
    assert sorted(converted) == ['a', 'b']  # 6 steps over two runs, one conversion per server's entry
    assert len(started(pids)) == 2  # the filler's only: the lazy runs started nothing
    assert [t.parameters_json_schema for t in first.infos[0].function_tools] == [
        t.parameters_json_schema for t in second.infos[0].function_tools
    ]


async def test_a_capability_made_right_after_a_start_reads_its_listing(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another capability of the same file and listing cache file, made while the first one's write of the listing
    is still under way (a slow disk, a loaded machine), waits for that write (bounded) instead of finding no entry."""
    from pydantic_ai_toolproxy.stores.listings import SQLiteListingStore

    slow_put = SQLiteListingStore.put

    def put(self: Any, key: str, listing: Any) -> None:
        time.sleep(0.5)
        slow_put(self, key, listing)

    monkeypatch.setattr(SQLiteListingStore, 'put', put)
    path = write(tmp_path, {'a': server(pids)})
    cache = tmp_path / 'listings.sqlite'
    filler = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[filler]).run('fill')
    await filler.stop_mcp_servers()
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=cache)  # its own store object
    script = Script([[(SEARCH, {'query': 'plain'})], 'done'])
    await Agent(script.model, capabilities=[proxy]).run('x')
    assert len(started(pids)) == 1  # the filler's: the lazy run found the listing and started nothing
