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
