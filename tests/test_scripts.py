"""The set-up scripts: `scripts/bootstrap --test` (run by `scripts/test`) fails at once, never skips, without CPython 3.13."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bootstrap_for_tests_fails_first_thing_without_cpython_313(tmp_path: Path) -> None:
    # PATH holds only `dirname` (no python3.13, no pyenv shims, no `pyenv` to ask) and PYTHON313 is unset,
    # so no CPython 3.13 can be found on any machine.
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    dirname = shutil.which('dirname')
    assert dirname is not None
    (bin_dir / 'dirname').symlink_to(dirname)
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHON313', 'PYENV_ROOT', 'PYENV_VERSION', 'VIRTUAL_ENV')}
    env['PATH'] = str(bin_dir)
    bash = shutil.which('bash')
    assert bash is not None
    proc = subprocess.run(
        [bash, 'scripts/bootstrap', '--test'], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith('bootstrap: CPython 3.13 not found'), proc.stderr
    assert 'PYTHON313=' in proc.stderr
    assert proc.stdout == ''  # it stopped before setting anything up


def test_bootstrap_rejects_unknown_options() -> None:
    proc = subprocess.run(
        ['bash', 'scripts/bootstrap', '--tests'], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and 'usage: bash scripts/bootstrap [--test]' in proc.stderr
