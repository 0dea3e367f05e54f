"""The test tiers of both suites (`tests/` and `tests_harness/`).

Tests marked `@pytest.mark.slow` (long soaks, load runs, big property sweeps) are skipped by a plain `pytest`, the
developer's inner loop; `--slow` runs them too, as `bash scripts/test` (and so CI) does.
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
