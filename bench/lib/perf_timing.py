"""Timing and memory helpers of `bench.perf`: wall-clock samples in milliseconds, their median and p95, RSS in
bytes (settled after a collection), and how the tables print a duration."""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t) / 1e6


def stats(samples: Sequence[float]) -> tuple[float, float]:
    """(median, p95) in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def per_query(fn: Callable[[str], Any], queries: Sequence[str], repeat: int = 1) -> tuple[float, float]:
    gc.collect()
    gc.disable()
    try:
        samples = [timed(lambda q=q: fn(q)) for _ in range(repeat) for q in queries]
    finally:
        gc.enable()
    return stats(samples)


def rss_bytes() -> int:
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def settled_rss() -> int:
    """RSS after a full garbage collection and, on glibc, `malloc_trim(0)`: memory freed but still cached by the
    allocator (e.g. the converted text of an index build) is returned first, so deltas show what stays in use."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL('libc.so.6').malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: plain RSS
        pass
    return rss_bytes()


def fmt(ms: float) -> str:
    return f'{ms * 1000:.0f} µs' if ms < 1 else f'{ms:.2f} ms' if ms < 1000 else f'{ms / 1000:.2f} s'
