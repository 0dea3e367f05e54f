"""`_core.pyi` matches the built extension module (mypy's stubtest), and test-only entry points stay out of `__all__`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pydantic_ai_toolproxy import _core

ALLOWLIST = Path(__file__).with_name('stubtest_allowlist.txt')


@pytest.mark.slow
def test_stub_matches_the_built_module() -> None:
    proc = subprocess.run(
        [sys.executable, '-m', 'mypy.stubtest', 'pydantic_ai_toolproxy._core', '--allowlist', str(ALLOWLIST)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_only_the_test_hook_is_allowlisted() -> None:
    # The allowlist hides `__all__`'s difference: it must be exactly the test hook.
    public = set(_core.__all__) - {'_panic_for_tests'}
    stub = Path(_core.__file__).with_name('_core.pyi').read_text()
    assert all(f"'{name}'" in stub for name in public)


def test_the_version_is_the_crates_and_the_distributions() -> None:
    from importlib.metadata import version

    import pydantic_ai_toolproxy

    assert pydantic_ai_toolproxy.__version__ == _core.__version__ == version('pydantic-ai-toolproxy')
