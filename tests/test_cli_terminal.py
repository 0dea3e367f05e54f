"""`toolproxy` on a real terminal: a pty, rendered by a terminal emulator (pyte), against piped output.

What the user sees on a terminal must end with what piped output holds: the progress display on stderr is
transient and erased before the first result line, Pydantic AI's first-run banner never appears, and a
reader that closes the pipe early (`| head`) ends the command quietly.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pyte

ROOT = Path(__file__).resolve().parent.parent
DEMO_CONFIG = ['--config', 'examples/toolproxy.toml']
PROBLEMS = ['-s', 'tests/cli_sources.py:problem_groups', '-s', 'tests/cli_sources.py:direct']
CLEAN = ['-s', 'tests/cli_sources.py:clean_groups']
COLUMNS, ROWS = 200, 200  # wide enough that no line wraps, tall enough that nothing scrolls away
# Variables that would change what the child decides about the terminal or the banner. pytest itself sets
# PYTEST_VERSION, which Pydantic AI reads to hide its banner; a user's shell has none of these.
CLEARED = (
    'PYTEST_VERSION',
    'CI',
    'PYDANTIC_AI_NO_BANNER',
    'FORCE_COLOR',
    'NO_COLOR',
    'TTY_COMPATIBLE',
    'COLUMNS',
    'LINES',
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env['TERM'] = 'xterm-256color'
    return env


@dataclass
class Screen:
    lines: list[str]  # the emulator's screen at exit, right-trimmed, trailing blank lines dropped
    raw: bytes  # every byte the child wrote to the terminal (stdout and stderr share it)
    status: int


def on_terminal(*args: str, timeout: float = 300, stdout_to: Path | None = None) -> Screen:
    """Run `python -m pydantic_ai_toolproxy ARGS` with stdin, stdout and stderr on one pty of COLUMNS x ROWS.

    `stdout_to` redirects only stdout to that file (`toolproxy ... > file` typed at a terminal).
    """
    argv = [sys.executable, '-m', 'pydantic_ai_toolproxy', *args]
    env = _env()
    pid, fd = pty.fork()
    if pid == 0:  # the child: size its terminal before anything asks for it
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', ROWS, COLUMNS, 0, 0))
            if stdout_to is not None:
                os.dup2(os.open(stdout_to, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            os.chdir(ROOT)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.ByteStream(screen)
    raw = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        raw += data
        stream.feed(data)
    else:
        os.kill(pid, 9)
    _, wait_status = os.waitpid(pid, 0)
    os.close(fd)
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return Screen(lines, bytes(raw), os.waitstatus_to_exitcode(wait_status))


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'pydantic_ai_toolproxy', *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=300,
    )


def words(lines: list[str]) -> list[list[str]]:
    """Each non-blank line as its words, without table rules: what a rich table and plain text share."""
    return [line.split() for line in lines if line.strip() and set(line.strip()) != {'─'}]


def assert_clean(screen: Screen) -> None:
    text = '\n'.join(screen.lines)
    assert 'pydantic-ai v' not in text and 'Logfire' not in text, text  # no first-run banner
    assert not any(ch in text for ch in '✓⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏'), text  # no progress left on screen
    assert b'Traceback' not in screen.raw


def test_search_on_a_terminal_shows_every_row_and_the_totals() -> None:
    args = [*DEMO_CONFIG, 'search', 'convert temperature', '--limit', '4']
    screen, plain = on_terminal(*args), piped(*args)
    assert screen.status == 0 and plain.returncode == 0, plain.stderr
    assert b'starting MCP server' in screen.raw  # progress was shown while it ran, then erased
    assert_clean(screen)
    assert words(screen.lines) == words(plain.stdout.splitlines())
    assert screen.lines[-1].startswith('total ') and 'next_offset 4' in screen.lines[-1]
    assert [w[0] for w in words(screen.lines)[2:6]] == ['1', '2', '3', '4']


def test_inspect_on_a_terminal_ends_with_the_totals_and_the_share() -> None:
    args = [*DEMO_CONFIG, 'inspect']
    screen, plain = on_terminal(*args), piped(*args)
    assert screen.status == 0 and plain.returncode == 0, plain.stderr
    assert_clean(screen)
    assert words(screen.lines) == words(plain.stdout.splitlines())
    assert screen.lines[-2].startswith('With the proxy each request carries ')


def test_check_on_a_terminal_keeps_every_problem_and_the_summary() -> None:
    args = [*PROBLEMS, 'check']
    screen, plain = on_terminal(*args), piped(*args)
    assert screen.status == 1 and plain.returncode == 1, plain.stderr
    assert_clean(screen)
    lines = plain.stdout.splitlines()
    # On a terminal the problems are a wrapped table, so compare the first and last lines and every problem's tool.
    assert screen.lines[0] == lines[0] and screen.lines[-1] == lines[-1]
    assert lines[-1].startswith('6 errors, 2 warnings')
    tools = [line.split()[2] for line in lines if line.startswith(('error ', 'warning '))]
    assert len(tools) == 8
    table_tools = [line.split()[2] for line in screen.lines if line.startswith(('error ', 'warning '))]
    assert table_tools == tools


def test_a_refused_search_on_a_terminal_shows_the_message_after_the_progress() -> None:
    screen = on_terminal(*CLEAN, 'search', 'x', '--group', 'nope')
    assert screen.status == 1
    assert_clean(screen)
    assert screen.lines[-1].startswith("toolproxy: error: the search was refused: Unknown group 'nope'.")


def test_a_closed_pipe_ends_quietly() -> None:
    # `toolproxy ... inspect --full | head -1`: the reader goes away before the output is written.
    proc = subprocess.Popen(
        [sys.executable, '-m', 'pydantic_ai_toolproxy', *CLEAN, 'inspect', '--full'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141
    assert err == ''


def test_json_on_a_terminal_is_the_piped_document() -> None:
    args = [*CLEAN, 'search', 'record', '--json']
    screen, plain = on_terminal(*args), piped(*args)
    assert screen.status == 0 and plain.returncode == 0, plain.stderr
    assert_clean(screen)
    # The compact JSON line is wider than the screen (the emulator wraps it), so compare the bytes written last.
    assert screen.raw.decode().replace('\r\n', '\n').endswith(plain.stdout)  # one line, not re-wrapped
    assert screen.lines[-1] and plain.stdout.rstrip().endswith(screen.lines[-1])


def test_stdout_redirected_to_a_file_gets_all_of_it_while_progress_stays_on_the_terminal(tmp_path: Path) -> None:
    args = [*DEMO_CONFIG, 'search', 'convert temperature', '--limit', '4']
    out = tmp_path / 'out.txt'
    screen, plain = on_terminal(*args, stdout_to=out), piped(*args)
    assert screen.status == 0 and plain.returncode == 0, plain.stderr
    assert out.read_text() == plain.stdout  # byte for byte what a pipe gets
    assert b'starting MCP server' in screen.raw and screen.lines == []  # the progress was shown, then erased
