"""Fixtures for every test, and the test tiers.

Shared helpers live in `support.py`. Tests marked `@pytest.mark.slow` (the long soak, envelope and pruning
properties) are skipped by a plain `pytest`; `--slow` runs them too, as `bash scripts/test` (and CI) does.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption('--slow', action='store_true', help='also run the tests marked slow (scripts/test does)')


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption('--slow'):
        return
    skip = pytest.mark.skip(reason='slow tier: run with --slow (bash scripts/test does)')
    for item in items:
        if 'slow' in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    from tools_fixtures import CALLS

    CALLS.clear()
