"""Time to store and load tool vectors through `SQLiteEmbeddingStore` (issue 22: load 100,000 cached vectors <= 1 s).

Two measurements, both on a fresh cache file of `--tools` vectors of `--dimensions` float32 under one model:

1. **Restart, end to end** (the issue's figure): the file holds the vector of every tool of a corpus (the real
   BFCL functions replicated with `_r{k}` name suffixes, as `bench/lib/replicas.py` builds them; synthetic tools
   when `bfcl-eval` is not installed), keyed by the hash of each tool's embedding text. Each of `--repeat` runs is
   a **new Python process** (a restart: nothing in memory, OS page cache warm) that builds the index records and
   the keyword index (not timed), then times what hybrid search adds before every tool has its vector in the Rust
   index: `ToolVectors.follow` (each tool's embedding text and fingerprint), then the fill a search waits for
   (`wait_for_tools`: one `get_many` of every fingerprint, the answer checked, every vector attached with
   `SearchIndex.set_vector_rows`). The embedder must never be called (a run that embeds fails). Prints the median
   and worst wall time, the process's CPU time (all its threads: less than the wall time only when other jobs
   take turns on the cores), the median of each part, and the process's RSS growth (vectors kept in Python
   included).
2. **Store alone**: `get_many` of every hash in a fresh store (`--repeat` times), and the one `put_many`.

`python -m bench.embedding_cache` prints both (its options: `--tools`, `--dimensions`, `--repeat`, `--skip-store`).
`restart_loads` is also what `bench.perf --only hybrid` calls (with real all-MiniLM-L6-v2 vectors); each restarted
process runs this module (`python -m bench.lib.vector_cache PATH TOOLS`).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai_toolproxy.stores import open_embedding_store

ROOT = Path(__file__).resolve().parents[2]

MODEL = 'bench:vectors'
TARGET_S = 1.0
"""Issue 22: loading 100,000 cached vectors <= 1 s."""


def vectors(tools: int, dimensions: int) -> dict[bytes, bytes]:
    """`{16-byte text hash: little-endian float32 vector}` for `tools` synthetic tool texts."""
    block = vector_block(dimensions)
    size = dimensions * 4
    return {
        hashlib.blake2b(f'tool {i}'.encode(), digest_size=16).digest(): block[(i % 64) * size : (i % 64 + 1) * size]
        for i in range(tools)
    }


def vector_block(dimensions: int) -> bytes:
    """64 deterministic pseudo-random float32 vectors, little-endian (the store never looks inside a vector)."""
    rng = random.Random(22)
    one = array('f', (rng.uniform(-1, 1) for _ in range(dimensions * 64)))
    if sys.byteorder != 'little':  # pragma: no cover - the store's values are little-endian
        one.byteswap()
    return one.tobytes()


# --------------------------------------------------------------------------- restart, end to end


def corpus_records(tools: int) -> tuple[list[Any], dict[str, str]]:
    """`(index records, group descriptions)` of `tools` tools: the BFCL functions, then replicas named
    `{name}_r{k}` (the corpus of `bench/lib/replicas.py`, in the same order), or synthetic tools without `bfcl-eval`."""
    from pydantic_ai_toolproxy.grouping.directory import index_record
    from pydantic_ai_toolproxy.grouping.names import canonical_name

    try:
        from examples.bfcl_tools import GROUP_DESCRIPTIONS, load_bfcl_functions

        base = [(f.name, f.domain, f.description, f.parameters) for f in load_bfcl_functions()]
        descriptions = dict(GROUP_DESCRIPTIONS)
    except Exception:  # bfcl-eval not installed: short synthetic tools
        groups = [f'group_{g}' for g in range(50)]
        base = [(f'tool_{i}', groups[i % 50], f'Does thing {i} to items.', {}) for i in range(2_000)]
        descriptions = {g: f'Group {g} of tools' for g in groups}
    records: list[Any] = []
    k = 0
    while len(records) < tools:
        for name, group, description, parameters in base:
            if len(records) >= tools:
                break
            suffix = '' if k == 0 else f'_r{k}'
            local = name[: 64 - len(suffix)] + suffix
            records.append(index_record(canonical_name(group, local), group, description, parameters))
        k += 1
    return records, descriptions


def text_hashes(records: Sequence[Any], descriptions: Mapping[str, str]) -> list[bytes]:
    """The embedding-text fingerprint of each record (the reference recipe of `hybrid.embedding_text`)."""
    from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text, text_hash

    return [text_hash(embedding_text(r[1], r[2], r[3], descriptions.get(r[1], ''))) for r in records]


def _embedder() -> Any:
    """The embedder a restart runs with: Pydantic AI's `TestEmbeddingModel` (only its identity is used: the cache
    holds every vector, and a run that calls the embedder fails)."""
    from pydantic_ai.embeddings import TestEmbeddingModel

    return TestEmbeddingModel()


def store_key() -> str:
    """The store `model` key the restart's `ToolVectors` reads under."""
    from pydantic_ai_toolproxy.hybrid.embedder import ResolvedEmbedder

    return ResolvedEmbedder(_embedder()).store_key


def open_place(place: str | Path) -> Any:
    """The store at `place`: a SQLite path, or a `postgresql://` URL (`stores.open_embedding_store`)."""
    return open_embedding_store(str(place))


def write_cache(place: str | Path, hashes: Sequence[bytes], rows: Callable[[int], bytes]) -> float:
    """Write `rows(i)` under `hashes[i]` (model `store_key()`) into the store at `place` (a SQLite path or a
    `postgresql://` URL); returns the seconds."""
    items = {h: rows(i) for i, h in enumerate(hashes)}
    started = time.perf_counter()
    with open_place(place) as store:
        store.put_many(store_key(), items)
    return time.perf_counter() - started


class _TimedStore:
    """An `EmbeddingStore` that times the `get_many` calls of the store it wraps."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.get_s = 0.0

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        started = time.perf_counter()
        try:
            return self.store.get_many(model, hashes)
        finally:
            self.get_s += time.perf_counter() - started

    def put_many(self, model: str, items: Mapping[bytes, bytes]) -> None:
        self.store.put_many(model, items)


def _rss() -> int:
    """RSS after a full collection and glibc's `malloc_trim(0)` (bytes)."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL('libc.so.6').malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def restart_child(path: str | Path, tools: int) -> dict[str, float]:
    """One restarted process's load (see the module docstring): the seconds of each part, and RSS growth."""
    from pydantic_ai_toolproxy import _core
    from pydantic_ai_toolproxy.config import ToolProxyConfig
    from pydantic_ai_toolproxy.hybrid.vectors import ToolVectors

    records, descriptions = corpus_records(tools)
    index = _core.SearchIndex()
    for group, description in descriptions.items():
        index.set_group_description(group, description)
    index.upsert(records)
    del records[tools:]
    timed = _TimedStore(open_place(path))
    config = ToolProxyConfig(embedder=_embedder(), embedding_cache=None)
    vectors = ToolVectors(config, descriptions, threading.Lock(), open_store=lambda: timed)
    rss = _rss()

    async def load() -> tuple[float, float]:
        started = time.perf_counter()
        with vectors.lock:
            vectors.follow(index, records, [])
        followed = time.perf_counter()
        await vectors.wait_for_tools(3600.0)
        return followed - started, time.perf_counter() - followed

    gc.collect()
    cpu = time.process_time()
    follow_s, fill_s = asyncio.run(load())
    cpu_s = time.process_time() - cpu
    with_vectors, wanted = vectors.coverage(index)
    if vectors.embedded or with_vectors != wanted or index.vector_count() != tools:
        raise SystemExit(
            f'restart load failed: {index.vector_count()} of {tools} vectors attached, {vectors.embedded} embedded'
        )
    return {
        'total_s': follow_s + fill_s,
        'follow_s': follow_s,
        'get_s': timed.get_s,
        'attach_s': fill_s - timed.get_s,
        'cpu_s': cpu_s,
        'rss': _rss() - rss,
    }


def restart_loads(path: str | Path, tools: int, repeat: int) -> list[dict[str, float]]:
    """`repeat` restarted processes loading the cache at `path` written for `corpus_records(tools)`, one after
    another; each one's `restart_child` figures."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT / 'python'), str(ROOT), *filter(None, [env.get('PYTHONPATH')])])
    out = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, '-m', 'bench.lib.vector_cache', str(path), str(tools)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise SystemExit(f'restart child failed:\n{done.stderr}')
        out.append(json.loads(done.stdout.splitlines()[-1]))
    return out


def summary(loads: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Median of each figure of `loads`, plus the worst total (`worst_s`)."""
    keys = loads[0].keys()
    figures = {key: statistics.median(load[key] for load in loads) for key in keys}
    figures['worst_s'] = max(load['total_s'] for load in loads)
    return figures


def describe(
    figures: Mapping[str, float], tools: int, runs: int, target: float = TARGET_S, label: str = 'restart'
) -> str:
    """One line: the end-to-end restart figure against `target` seconds, with its parts."""
    met = 'met' if figures['total_s'] <= target else 'NOT met'
    return (
        f'{label}: {tools:,} cached vectors to the Rust index: median {figures["total_s"]:.3f} s, worst '
        f'{figures["worst_s"]:.3f} s of {runs} processes (target {target:g} s: {met}), CPU {figures["cpu_s"]:.3f} s; '
        f'parts (medians): follow '
        f'{figures["follow_s"]:.3f} s, get_many {figures["get_s"]:.3f} s, check + set_vectors '
        f'{figures["attach_s"]:.3f} s; RSS +{figures["rss"] / 1e6:.0f} MB'
    )


if __name__ == '__main__':  # one restarted process of `restart_loads`: PATH|URL TOOLS
    print(json.dumps(restart_child(sys.argv[1], int(sys.argv[2]))))
