"""Fixtures for every test of `tests/`. Shared helpers live in `support.py`; the slow tier in `../conftest.py`."""

from __future__ import annotations

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
