"""The MCP listing cache under hostile input and locked stores (issue 35, hostile findings 1, 2, 4 and 5), in real
`Agent` runs over real stdio servers (tests/hostile_mcp_server.py, counted by the pids they record).

- An entry holding a server's `ttlMs = 10**400` is read with its hint cut to `MAX_TTL_MS`, and every later run
  works (an entry is made with the same cut).
- A cached tool the MCP SDK rejects (no `inputSchema`) makes its entry count as missing, read once.
- A SQLite file locked by another process, or a PostgreSQL table locked by another session, costs
  `from_mcp_config` one bounded wait (not one per server) and never stalls the run: every healthy group is there.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from support import CALL, SEARCH, Script, last_return
from test_mcp_lazy import server, write
from test_mcp_lifetime import alive, started

from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.mcp_listing_cache import (
    MAX_TTL_MS,
    ServerListing,
    SQLiteListingStore,
)
from pydantic_ai_toolproxy.mcp_servers.listing_io import STORE_TIMEOUT


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    """The pid file the test's servers write; a server still alive after the test is killed."""
    yield tmp_path / 'pids'
    for pid in alive(tmp_path / 'pids', wait=0):
        os.kill(pid, signal.SIGKILL)


def groups_offered(script: Script, step: int = 0) -> list[str]:
    schema = script.tool_def(SEARCH, step).parameters_json_schema
    return next(option['enum'] for option in schema['properties']['group']['anyOf'] if 'enum' in option)


def call(group: str) -> Script:
    return Script([[(CALL, {'group': group, 'tool': 'plain_tool', 'arguments': {}})], 'done'])


def key_of(proxy: ToolProxyCapability[Any], group: str) -> str:
    return proxy.groups[group].source.cache_key  # type: ignore[attr-defined,no-any-return]


def wait_written(proxy: ToolProxyCapability[Any]) -> None:
    for group in proxy.groups.values():
        assert group.source.wait_stored(10.0)  # type: ignore[attr-defined]


def test_a_ttl_of_any_size_is_kept_as_at_most_30_days() -> None:
    entry = ServerListing(tools=(), fetched_at=time.time(), ttl_ms=10**400)
    assert entry.ttl_ms == MAX_TTL_MS and entry.fresh()
    assert not ServerListing(tools=(), fetched_at=time.time() - 31 * 86_400, ttl_ms=10**400).fresh()
    # A row another build wrote with the hint as it came: read, cut, never an OverflowError.
    row = json.dumps({'tools': [], 'fetched_at': time.time(), 'ttl_ms': 10**400})
    assert ServerListing.from_json(row).ttl_ms == MAX_TTL_MS and ServerListing.from_json(row).fresh()
    assert not ServerListing(tools=(), fetched_at=float('nan')).fresh()
    assert not ServerListing.from_json(json.dumps({'tools': [], 'fetched_at': 1e308 * 10})).fresh()
    for hint in (0, -5, True, 'soon', None):
        assert ServerListing(tools=(), ttl_ms=hint).ttl_ms is None  # type: ignore[arg-type]


async def test_an_entry_with_a_huge_ttl_breaks_no_later_run(tmp_path: Path, pids: Path) -> None:
    # The client of this MCP SDK reads `ttlMs` only on the 2026-07-28 protocol, so the entry a server announcing
    # `ttlMs = 10**400` left is written as it would be stored without the cut (another build, another client).
    path = write(tmp_path, {'huge': server(pids), 'ok': server(pids)})
    cache = tmp_path / 'listings.sqlite3'
    first = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[first]).run('x')
    wait_written(first)
    entry = SQLiteListingStore(cache).get(key_of(first, 'huge'))
    assert entry is not None
    row = json.loads(entry.to_json())
    row['ttl_ms'] = 10**400
    with closing(sqlite3.connect(cache)) as conn, conn:
        conn.execute('UPDATE mcp_listings SET entry = ? WHERE key = ?', (json.dumps(row), key_of(first, 'huge')))
    assert SQLiteListingStore(cache).get(key_of(first, 'huge')).ttl_ms == MAX_TTL_MS  # type: ignore[union-attr]
    await first.stop_mcp_servers()  # the later capabilities start their own (the pools are process-wide)
    for lazy in (True, False):  # later runs, lazy (served from the cache) and eager: both groups there
        before = len(started(pids))
        later = ToolProxyCapability.from_mcp_config(path, listing_cache=cache, lazy=lazy)
        script = call('ok')
        result = await Agent(script.model, capabilities=[later]).run('x')
        assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
        assert sorted(groups_offered(script)) == ['huge', 'ok']
        assert len(started(pids)) == before + (1 if lazy else 2)  # lazy: 'huge' served from its entry
        await later.stop_mcp_servers()
    assert alive(pids) == []


async def test_a_cached_tool_the_sdk_rejects_counts_as_missing(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, {'a': server(pids), 'b': server(pids)})
    cache = tmp_path / 'listings.sqlite3'
    first = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(call('a').model, capabilities=[first]).run('x')
    wait_written(first)
    store = SQLiteListingStore(cache)
    entry = store.get(key_of(first, 'a'))
    assert entry is not None
    broken = [dict(tool) for tool in entry.tools]
    del broken[0]['inputSchema']  # still valid JSON, no longer an MCP tool
    store.put(key_of(first, 'a'), ServerListing(tools=tuple(broken), fetched_at=time.time()))
    await first.stop_mcp_servers()
    before = len(started(pids))
    caplog.set_level(logging.WARNING, 'pydantic_ai_toolproxy')
    lazy = ToolProxyCapability.from_mcp_config(path, listing_cache=cache, lazy=True)
    warned = [r.getMessage() for r in caplog.records if 'unreadable' in r.getMessage()]
    assert len(warned) == 1 and "server 'a'" in warned[0]
    script = call('b')  # a run that calls the other server: not broken by the entry
    result = await Agent(script.model, capabilities=[lazy]).run('x')
    assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
    # 'a' had no usable entry: started to list its tools; 'b' was served from the cache, started by its call.
    assert len(started(pids)) == before + 2
    await lazy.stop_mcp_servers()
    assert alive(pids) == []
    assert sorted(groups_offered(script)) == ['a', 'b']


HOLD_SQLITE = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute('PRAGMA locking_mode=EXCLUSIVE')
conn.execute('BEGIN EXCLUSIVE')
conn.execute("INSERT OR REPLACE INTO mcp_listings VALUES ('held', '{}')")
print('held', flush=True)
time.sleep(120)
"""


async def test_a_sqlite_cache_locked_by_another_process_never_stalls(
    tmp_path: Path, pids: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = ('a', 'b', 'c', 'd')
    path = write(tmp_path, {name: server(pids) for name in names})
    cache = tmp_path / 'listings.sqlite3'
    warm = ToolProxyCapability.from_mcp_config(path, listing_cache=cache)
    await Agent(Script(['done']).model, capabilities=[warm]).run('x')
    wait_written(warm)
    await warm.stop_mcp_servers()
    holder = subprocess.Popen([sys.executable, '-c', HOLD_SQLITE, str(cache)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == 'held'
        caplog.set_level(logging.WARNING, 'pydantic_ai_toolproxy')
        began = time.monotonic()
        proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=cache, lazy=True)
        built = time.monotonic() - began
        assert built < STORE_TIMEOUT + 1.5, built  # one bounded wait for the file, not 5 s per server
        failed = [r.getMessage() for r in caplog.records if 'listing cache' in r.getMessage()]
        assert len(failed) == 1 and "'a', 'b', 'c', 'd'" in failed[0], failed
        script = call('c')
        result = await Agent(script.model, capabilities=[proxy]).run('x')
        assert sorted(groups_offered(script)) == list(names)  # every server started (a miss), none left out
        assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
        assert len([r for r in caplog.records if 'listing cache' in r.getMessage()]) == 1  # still one warning
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    await proxy.stop_mcp_servers()
    assert alive(pids) == []


async def test_a_postgres_cache_locked_by_another_session_never_stalls(
    tmp_path: Path, pids: Path, postgres_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    from pydantic_ai_toolproxy.stores.postgres import PostgresListingStore

    names = ('a', 'b', 'c')
    path = write(tmp_path, {name: server(pids) for name in names})
    seed = PostgresListingStore(postgres_db)
    seed.put('seed', ServerListing(tools=()))  # makes the table
    warm = ToolProxyCapability.from_mcp_config(path, listing_cache=postgres_db)
    await Agent(Script(['done']).model, capabilities=[warm]).run('x')
    wait_written(warm)
    assert all(seed.get(key_of(warm, name)) is not None for name in names)
    await warm.stop_mcp_servers()
    with psycopg.connect(postgres_db, autocommit=False) as other:
        other.execute('LOCK TABLE toolproxy_mcp_listings IN ACCESS EXCLUSIVE MODE')
        caplog.set_level(logging.WARNING, 'pydantic_ai_toolproxy')
        began = time.monotonic()
        proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=postgres_db, lazy=True)
        built = time.monotonic() - began
        assert built < STORE_TIMEOUT + 1.5, built  # not the 30 s statement timeout, not once per server
        script = call('b')
        began = time.monotonic()
        result = await Agent(script.model, capabilities=[proxy]).run('x')
        ran = time.monotonic() - began
        assert sorted(groups_offered(script)) == list(names)
        assert last_return(result.all_messages(), CALL).content == 'ran plain_tool'
        assert ran < 20, ran  # servers started as without a cache; the writes wait in threads of their own
        other.rollback()
    await proxy.stop_mcp_servers()
    assert alive(pids) == []
    seed.close()
