"""Many MCP servers: concurrent start, and lazy start from the listing cache, in real `Agent` runs over real stdio
servers (tests/hostile_mcp_server.py) that record each start in a pid file, so every test counts the processes its
runs started and checks that none is alive afterwards.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ToolReturnPart
from support import CALL, SEARCH, Script, last_return, page_of, toolproxy
from test_mcp_lifetime import alive, started

from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.mcp_listing_cache import (
    MemoryListingStore,
    ServerListing,
    SQLiteListingStore,
    listing_key,
    open_listing_store,
)

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = str(ROOT / 'tests' / 'hostile_mcp_server.py')


def server(pids: Path, *extra: str) -> dict[str, Any]:
    return {'command': sys.executable, 'args': [HOSTILE, '--pid-file', str(pids), '--extra-tools', '3', *extra]}


def write(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': servers}), encoding='utf-8')
    return path


@pytest.fixture
def pids(tmp_path: Path) -> Any:
    path = tmp_path / 'pids'
    yield path
    import os

    for pid in alive(path, wait=0):
        os.kill(pid, 9)


def search_then_call(group: str, tool: str, arguments: dict[str, Any] | None = None) -> Script:
    return Script(
        [
            [(SEARCH, {'query': 'generated tool number 2'})],
            [(CALL, {'group': group, 'tool': tool, 'arguments': arguments or {}})],
            'done',
        ]
    )


async def test_cold_then_warm_lazy_runs_start_only_the_server_called(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {name: server(pids) for name in ('a', 'b', 'c')})
    store = MemoryListingStore()
    cold = Script([[(SEARCH, {'query': 'generated tool number 2'})], 'done'])
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=store)
    await Agent(cold.model, capabilities=[proxy]).run('x')
    assert len(started(pids)) == 3  # no cached listing: each started to list its tools (kept for its next run)
    assert await proxy.stop_mcp_servers() == 3 and alive(pids) == []
    # A new capability over the same file and store (another process would read the same SQLite file).
    searches = Script([[(SEARCH, {'query': 'generated tool number 2'})], 'done'])
    warm = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=store)
    result = await Agent(searches.model, capabilities=[warm]).run('x')
    assert len(started(pids)) == 3  # a run that only searches starts nothing
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['tool'] == 'tool_2'
    calls = search_then_call('b', 'plain_tool')
    result = await Agent(calls.model, capabilities=[warm]).run('x')
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
    assert len(started(pids)) == 4  # one server started, by the call, kept for later runs
    assert await warm.stop_mcp_servers() == 1 and alive(pids) == []


async def test_the_page_from_the_cache_equals_the_page_from_live_servers(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids), 'b': server(pids, '--extra-tools', '5')})
    store = MemoryListingStore()
    pages = []
    for lazy in (False, True):
        script = Script([[(SEARCH, {'query': 'generated tool'})], [(SEARCH, {'query': '', 'group': 'b'})], 'done'])
        proxy = ToolProxyCapability.from_mcp_config(path, lazy=lazy, listing_cache=store)
        result = await Agent(script.model, capabilities=[proxy]).run('x')
        pages.append(
            [p.model_response_str() for p in result.all_messages()[-1].parts if isinstance(p, ToolReturnPart)]
            + [
                p.model_response_str()
                for m in result.all_messages()
                for p in m.parts
                if isinstance(p, ToolReturnPart) and p.tool_name == SEARCH
            ]
        )
        assert script.tool_def(SEARCH).parameters_json_schema is not None
    assert len(started(pids)) == 2  # the live run; the lazy one started nothing
    assert pages[0] == pages[1]


async def test_an_upgraded_server_is_noticed_at_its_first_call(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    version = tmp_path / 'version'
    version.write_text('1')
    path = write(tmp_path, {'a': server(pids, '--version-file', str(version)), 'b': server(pids)})
    store = MemoryListingStore()
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=store)
    await Agent(Script(['done']).model, capabilities=[proxy]).run('x')  # lists both: the cache is warm
    await proxy.stop_mcp_servers()  # stopped (idle, or the host restarted): its next start is the upgraded one
    key = proxy.groups['a'].source.cache_key  # type: ignore[attr-defined]
    assert [t['name'] for t in store.get(key).tools][-4:] == ['plain_tool', 'tool_0', 'tool_1', 'tool_2']  # type: ignore[union-attr]
    version.write_text('3')  # the server now lists plain_tool_v3 instead of plain_tool; its command line is the same
    script = Script(
        [
            [(CALL, {'group': 'a', 'tool': 'plain_tool', 'arguments': {}})],
            [(SEARCH, {'query': 'well-formed tool that always works', 'group': 'a'})],
            [(CALL, {'group': 'a', 'tool': 'plain_tool_v3', 'arguments': {}})],
            'done',
        ]
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    retry = next(p for p in result.all_messages()[2].parts if getattr(p, 'tool_name', None) == CALL)
    text = retry.model_response_str()
    assert "no longer has the tool 'plain_tool'" in text and 'Search the group again' in text and len(text) <= 2_000
    page = page_of(next(p for p in returns if p.tool_name == SEARCH))
    assert page['tools'][0]['tool'] == 'plain_tool_v3'  # the index followed the live listing in the same run
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool_v3'
    assert 'plain_tool_v3' in [t['name'] for t in store.get(key).tools]  # type: ignore[union-attr]  # entry replaced
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_a_changed_schema_is_checked_against_the_live_one(tmp_path: Path, pids: Path) -> None:
    version = tmp_path / 'version'
    version.write_text('1')
    path = write(tmp_path, {'a': server(pids, '--version-file', str(version))})
    store = MemoryListingStore()
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=store)
    await Agent(Script(['done']).model, capabilities=[proxy]).run('x')
    await proxy.stop_mcp_servers()  # its next start is the new version
    version.write_text('2')  # plain_tool now requires `text`
    script = Script([[(CALL, {'group': 'a', 'tool': 'plain_tool', 'arguments': {}})], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    text = result.all_messages()[2].parts[0].model_response_str()  # type: ignore[union-attr]
    assert "The tool 'plain_tool' of group 'a' changed since it was listed" in text
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_a_server_broken_on_call_fails_that_call_only(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    version = tmp_path / 'version'
    version.write_text('1')
    path = write(tmp_path, {'a': server(pids, '--version-file', str(version)), 'b': server(pids)})
    store = MemoryListingStore()
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=store)
    await Agent(Script(['done']).model, capabilities=[proxy]).run('x')
    await proxy.stop_mcp_servers()  # its next start crashes
    version.write_text('crash')
    script = Script(
        [
            [(CALL, {'group': 'a', 'tool': 'plain_tool', 'arguments': {}})],
            [(CALL, {'group': 'b', 'tool': 'plain_tool', 'arguments': {}})],
            'done',
        ]
    )
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
    failed = result.all_messages()[2].parts[0].model_response_str()  # type: ignore[union-attr]
    assert "The MCP server of group 'a' could not be started, so 'plain_tool' did not run" in failed
    assert len(failed) <= 2_000
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'  # group b works
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and 'certificate verify failed (hostile test)' in warnings[0]
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_a_server_removed_from_the_file_is_gone_and_its_entry_unused(tmp_path: Path, pids: Path) -> None:
    store = MemoryListingStore()
    both = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    earlier = ToolProxyCapability.from_mcp_config(both, lazy=True, listing_cache=store)
    await Agent(Script(['done']).model, capabilities=[earlier]).run('x')
    await earlier.stop_mcp_servers()
    only_a = write(tmp_path, {'a': server(pids)})
    script = Script([[(SEARCH, {'query': 'generated tool'})], 'done'])
    proxy = ToolProxyCapability.from_mcp_config(only_a, lazy=True, listing_cache=store)
    assert list(proxy.groups) == ['a']
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert {t['group'] for t in page_of(last_return(result.all_messages(), SEARCH))['tools']} == {'a'}
    assert len(started(pids)) == 2 and alive(pids) == []  # the lazy run started nothing


async def test_concurrent_runs_sharing_one_lazy_capability_start_the_server_once(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {'a': server(pids, '--start-delay', '0.5'), 'b': server(pids)})
    store = MemoryListingStore()
    proxy = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=store)
    await Agent(Script(['done']).model, capabilities=[proxy]).run('x')
    assert len(started(pids)) == 2

    async def one() -> Any:
        script = Script([[(CALL, {'group': 'a', 'tool': 'plain_tool', 'arguments': {}})], 'done'])
        agent = Agent(script.model, capabilities=[proxy])
        async with agent:  # both runs inside: the server is shared while either holds it
            return await agent.run('x')

    results = await asyncio.gather(one(), one(), one())
    assert [last_return(r.all_messages(), CALL).content for r in results] == ['ran plain_tool'] * 3
    assert len(started(pids)) == 2  # the first run's processes, kept: the concurrent runs started none
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_servers_start_concurrently_at_run_entry(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {name: server(pids, '--start-delay', '1') for name in ('a', 'b', 'c')})
    script = Script([[(SEARCH, {'query': 'generated tool'})], 'done'])
    proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=None)
    await Agent(script.model, capabilities=[proxy]).run('x')
    stamps = sorted(float(line.split()[1]) for line in pids.read_text().splitlines())
    assert len(stamps) == 3
    assert stamps[-1] - stamps[0] < 0.9  # one after another, each 1 s start would put them >= 1 s apart
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


def test_the_cli_with_a_warm_cache_starts_no_server(tmp_path: Path, pids: Path) -> None:
    path = write(tmp_path, {name: server(pids) for name in ('a', 'b')})
    cache = tmp_path / 'listings.sqlite3'
    cold = toolproxy('--mcp-config', str(path), '--listing-cache', str(cache), '--lazy', 'check', '--json')
    assert cold.stderr.count('no cached listing; started to list its tools') == 2, cold.stderr
    pids.unlink()
    refreshed = toolproxy('--mcp-config', str(path), '--listing-cache', str(cache), 'refresh')
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stdout.count('tools, listed now') == 2
    assert len(started(pids)) == 2
    for command in (['inspect', '--json'], ['search', 'generated tool', '--json'], ['check', '--json']):
        proc = toolproxy('--mcp-config', str(path), '--listing-cache', str(cache), '--lazy', *command)
        assert proc.returncode in (0, 1), proc.stderr  # check finds the hostile server's oversized tool
        assert json.loads(proc.stdout)
    assert len(started(pids)) == 2 and alive(pids) == []
    eager = toolproxy('--mcp-config', str(path), '--listing-cache', str(cache), 'inspect')
    assert eager.returncode == 0 and len(started(pids)) == 4


def test_listing_keys_hash_secrets_and_follow_the_script(tmp_path: Path) -> None:
    from fastmcp.client.transports import StdioTransport

    script = tmp_path / 'server.py'
    script.write_text('print(1)\n')
    secret = 'sk-live-do-not-store'
    one = listing_key('s', StdioTransport(sys.executable, [str(script)], env={'TOKEN': secret}))
    assert secret not in one and one.startswith('1:s:')
    assert listing_key('s', StdioTransport(sys.executable, [str(script)], env={'TOKEN': 'other'})) != one
    assert listing_key('s', StdioTransport(sys.executable, [str(script)], env={'TOKEN': secret})) == one
    script.write_text('print(2)  # upgraded\n')
    assert listing_key('s', StdioTransport(sys.executable, [str(script)], env={'TOKEN': secret})) != one
    store = SQLiteListingStore(tmp_path / 'l.sqlite3')
    store.put(one, ServerListing(tools=({'name': 't', 'inputSchema': {'type': 'object'}},), fetched_at=1.0))
    assert secret not in (tmp_path / 'l.sqlite3').read_bytes().decode('latin-1')


def test_entry_age_honours_a_positive_ttl_only() -> None:
    entry = ServerListing(tools=(), fetched_at=1_000.0)
    assert entry.fresh(max_age=60, now=1_030.0) and not entry.fresh(max_age=60, now=1_100.0)
    zero = ServerListing(tools=(), fetched_at=1_000.0, ttl_ms=0)  # "do not cache" is not "expired at once forever"
    assert zero.fresh(max_age=60, now=1_030.0)
    hinted = ServerListing(tools=(), fetched_at=1_000.0, ttl_ms=5_000)
    assert hinted.fresh(max_age=60, now=1_004.0) and not hinted.fresh(max_age=60, now=1_006.0)
    assert ServerListing.from_json(hinted.to_json()) == hinted


def test_bad_settings_fail_at_construction_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, {'a': {'command': sys.executable, 'args': [HOSTILE]}})
    with pytest.raises(ValueError, match="lazy names 'nobody', which is not a server"):
        ToolProxyCapability.from_mcp_config(path, lazy=['nobody'])
    with pytest.raises(TypeError, match='listing_cache must be'):
        ToolProxyCapability.from_mcp_config(path, listing_cache=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='max_age must be a positive number'):
        ToolProxyCapability.from_mcp_config(path, listing_max_age=0)
    assert open_listing_store('off') is None and open_listing_store(None) is None


async def test_a_fleet_lists_each_server_once_through_postgres(tmp_path: Path, pids: Path, postgres_db: str) -> None:
    """`listing_cache='postgresql://...'`: the first worker's live start stores the listing in the database; a
    second worker (here a new capability, and the CLI in another process) searches it without starting a server."""
    path = write(tmp_path, {name: server(pids) for name in ('a', 'b')})
    first = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=postgres_db)
    await Agent(Script([[(SEARCH, {'query': 'generated tool number 2'})], 'done']).model, capabilities=[first]).run('x')
    assert len(started(pids)) == 2
    await first.stop_mcp_servers()
    assert alive(pids) == []
    second = ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=postgres_db)
    searches = Script([[(SEARCH, {'query': 'generated tool number 2'})], 'done'])
    result = await Agent(searches.model, capabilities=[second]).run('x')
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['tool'] == 'tool_2'
    proc = toolproxy('--mcp-config', str(path), '--listing-cache', postgres_db, '--lazy', 'search', 'generated tool')
    assert proc.returncode == 0, proc.stderr
    assert len(started(pids)) == 2 and alive(pids) == []  # neither the second worker nor the CLI started one
