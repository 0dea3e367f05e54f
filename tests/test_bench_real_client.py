"""Smoke test of the real-client step benchmark (bench/lib/real_client.py, bench/lib/loopback_llm.py): the scripted loopback
server in its own process, Pydantic AI's `OpenAIChatModel` on the real `openai` SDK, one run of each row at a tiny
size. Fails when the benchmark breaks; the figures themselves come from `bash scripts/bench-perf`."""

from __future__ import annotations

import time

import pytest

pytest.importorskip('openai', reason='the real-client benchmark needs the openai SDK (pydantic-ai-slim[openai])')

from bench.lib import real_client
from bench.lib.loopback_llm import LoopbackServer
from bench.lib.replicas import corpus
from examples.bfcl_tools import load_bfcl_functions


async def test_one_run_of_each_row_through_the_loopback_server() -> None:
    fns = corpus(40, load_bfcl_functions())
    with LoopbackServer(max_requests=100, max_seconds=120, idle_seconds=60) as server:
        samples = await real_client.measure(fns, server, runs=1, provider='openai')
    direct, search, proxy = (samples[row] for row in real_client.ROWS)
    # direct: the tool call, then text; ToolSearch and ToolProxy: a search, the call, then text
    assert [s.runs for s in (direct, search, proxy)] == [1, 1, 1]
    assert [len(s.step_cpu) for s in (direct, search, proxy)] == [2, 3, 3]
    assert [len(s.request_bytes) for s in (direct, search, proxy)] == [2, 3, 3]
    assert all(ms > 0 for s in (direct, search, proxy) for ms in s.step_wall)
    # every request of the direct row carries all 40 definitions; the proxy's carry its two controls and a page
    assert min(direct.request_bytes) > 2 * max(proxy.request_bytes)
    rows = real_client.table_rows(40, samples)
    assert [row[1] for row in rows] == list(real_client.ROWS)
    assert rows[0][5] == '1.000x'


def test_loopback_server_stops_by_itself() -> None:
    server = LoopbackServer(max_requests=10, max_seconds=30, idle_seconds=0.5)
    try:
        assert server.stats() == []
        deadline = time.monotonic() + 10
        while server.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.process.poll() == 0
    finally:
        server.close()
