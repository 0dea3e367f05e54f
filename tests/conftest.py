"""Fixtures for every test of `tests/`. Shared helpers live in `support.py`; the slow tier in `../conftest.py`."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    from tools_fixtures import CALLS

    CALLS.clear()


@pytest.fixture(autouse=True)
def _listing_cache_of_the_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's default MCP listing cache is a file of its own (never the user's ~/.cache one)."""
    monkeypatch.setenv('TOOLPROXY_LISTING_CACHE', str(tmp_path_factory.mktemp('listings') / 'mcp-listings.sqlite3'))


@pytest.fixture(autouse=True)
def _no_embedding_left_running() -> Any:
    """Cancel what a test left on the process-wide embedding loop (a hung test embedder keeps its call until
    `embedding_timeout`), so it cannot finish, and log, inside the next test."""
    yield
    import asyncio
    import contextlib

    from pydantic_ai_toolproxy.hybrid.loop import running_loops

    for loop in running_loops():

        async def cancel_the_rest() -> None:
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)

        with contextlib.suppress(Exception):  # a loop stopping meanwhile: nothing left to cancel
            asyncio.run_coroutine_threadsafe(cancel_the_rest(), loop).result(timeout=5.0)


@pytest.fixture(scope='session')
def postgres() -> Any:
    """A throwaway PostgreSQL server for the whole session (`postgres_server.start_postgres`), on a unix socket.
    Never skipped: a machine without PostgreSQL fails these tests (`.ci/run` installs it)."""
    from bench.lib.postgres_server import start_postgres

    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture
def postgres_db(postgres: Any, request: pytest.FixtureRequest) -> str:
    """A fresh database of the session's server for one test: its URL."""
    import re

    name = 'db_' + re.sub(r'[^a-z0-9]+', '_', request.node.name.lower())[:50] + f'_{id(request) % 100000}'
    postgres.psql(f'CREATE DATABASE {name}')
    return str(postgres.url(name))
