"""The core's rankings are byte-identical to the stored dumps (`bench/dump_rankings.py`): the keyword ranking of
`bench/dumps/after.txt` and the hybrid ranking (`--hybrid`, deterministic vectors) of `bench/dumps/hybrid.txt`.

A change that moves a ranking on purpose rewrites the dump in the same commit (see `bench/dump_rankings.py`). The
BFCL data the dumps read is installed by `scripts/bootstrap`; without it these tests fail (nothing is skipped).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ROOT / 'bench' / 'dumps'


@pytest.mark.parametrize(
    ('flags', 'stored'), [([], 'after.txt'), (['--hybrid'], 'hybrid.txt')], ids=['keyword', 'hybrid']
)
def test_the_rankings_equal_the_stored_dump(tmp_path: Path, flags: list[str], stored: str) -> None:
    out = tmp_path / stored
    proc = subprocess.run(
        [sys.executable, '-m', 'bench.dump_rankings', '--out', str(out), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    now = out.read_bytes()
    expected = (DUMPS / stored).read_bytes()
    if now != expected:
        now_lines, expected_lines = now.decode().splitlines(), expected.decode().splitlines()
        first = next(
            (n for n, (a, b) in enumerate(zip(now_lines, expected_lines)) if a != b),
            min(len(now_lines), len(expected_lines)),
        )
        context = '\n'.join(
            f'{n + 1}: stored {expected_lines[n] if n < len(expected_lines) else "<end>"!r}\n'
            f'{n + 1}: now    {now_lines[n] if n < len(now_lines) else "<end>"!r}'
            for n in range(max(0, first - 1), first + 2)
        )
        pytest.fail(f'the ranking differs from bench/dumps/{stored} first at line {first + 1}:\n{context}')
