"""Fixtures for the a13n-harness tests (run with CPython 3.13 and the `.venv313` environment).

`kb_server` starts the knowledge-base MCP server (`kb_mcp_server.py`) over streamable HTTP on a free
loopback port for one test module and stops it afterwards; its header log is read through `headers()`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault('PYDANTIC_AI_NO_BANNER', '1')
SERVER = Path(__file__).resolve().parent / 'kb_mcp_server.py'


@dataclass
class KnowledgeServer:
    """A running `kb_mcp_server.py`: its URL and the headers it has recorded."""

    url: str
    log: Path

    def headers(self) -> list[dict[str, Any]]:
        """Recorded requests, oldest first: `{"method", "x-run-id", "x-tenant-id", "mcp-session-id"}`."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding='utf-8').splitlines() if line]

    def clear(self) -> None:
        self.log.write_text('', encoding='utf-8')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.fixture(scope='module')
def kb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeServer]:
    port = _free_port()
    folder = tmp_path_factory.mktemp('kb')
    log, errors = folder / 'headers.jsonl', folder / 'stderr.txt'
    stderr = errors.open('wb')
    process = subprocess.Popen(
        [sys.executable, str(SERVER), '--port', str(port), '--log', str(log)], stdout=subprocess.DEVNULL, stderr=stderr
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f'kb_mcp_server.py exited early: {errors.read_text(errors="replace")}')
            try:
                socket.create_connection(('127.0.0.1', port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError('kb_mcp_server.py did not start listening within 30 s') from None
                time.sleep(0.05)
        yield KnowledgeServer(url=f'http://127.0.0.1:{port}/mcp', log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stderr.close()
