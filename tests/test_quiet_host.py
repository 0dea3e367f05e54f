"""A host's output and logs stay free of the model libraries' noise (`embeddings._quiet`): a real host process
(tests/quiet_host/host.py: logging at WARNING to stderr, three agent runs with one search each) whose embedder runs
on a stand-in model library named `transformers` that, on every call, logs an advisory line, warns a FutureWarning
and draws a progress bar. Piped, none of it reaches stderr; on a terminal, each shows once per process at most; a
level the host set on the library's logger is kept."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pydantic_ai_toolproxy

HOST = Path(__file__).resolve().parent / 'quiet_host' / 'host.py'
NOISE = ('ADVISORY line', 'FutureWarning: DEPRECATED argument', 'PROGRESS 100%')
"""One marker per line of noise (a warning shows as two lines: the message, then the source line)."""


def environment() -> dict[str, str]:
    package = Path(pydantic_ai_toolproxy.__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ('HF_HUB_DISABLE_PROGRESS_BARS', 'TRANSFORMERS_VERBOSITY')}
    return {**env, 'PYTHONPATH': str(package), 'PYTHONWARNINGS': 'default', 'PYDANTIC_AI_NO_BANNER': '1'}


def run_piped(*args: str) -> tuple[dict[str, int], str]:
    proc = subprocess.run(
        [sys.executable, str(HOST), *args], capture_output=True, text=True, timeout=120, env=environment()
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def run_on_a_terminal() -> tuple[dict[str, int], str]:
    """The host with its stderr on a pseudo-terminal; returns its JSON line and what the terminal received."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, str(HOST)], stdout=subprocess.PIPE, stderr=slave, env=environment(), text=True
    )
    os.close(slave)
    received = b''
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the host closed the terminal's other side
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    assert proc.stdout is not None
    with proc.stdout:
        out = proc.stdout.read()
    assert proc.wait(timeout=120) == 0, received
    return json.loads(out), received.decode('utf-8', 'replace')


def test_a_piped_host_sees_nothing_of_the_model_library() -> None:
    out, stderr = run_piped()
    assert out['calls'] >= 3  # tool texts and each run's query went through the library
    assert not [
        line for line in stderr.splitlines() if any(word in line for word in ('ADVISORY', 'DEPRECATED', 'PROGRESS'))
    ], stderr


def test_a_host_on_a_terminal_sees_each_of_them_once_at_most() -> None:
    out, received = run_on_a_terminal()
    assert out['calls'] >= 3
    for noise in NOISE:
        assert received.count(noise) <= 1, (noise, received)


def test_a_level_the_host_set_on_the_librarys_logger_is_kept() -> None:
    out, stderr = run_piped('--verbose-library')
    assert stderr.count('ADVISORY line') == out['calls'] >= 3, stderr
