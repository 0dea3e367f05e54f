"""Hybrid-search timings of the performance benchmark (``bench/perf.py`` calls :func:`measure`).

At each size (10,000 and 100,000 tools by default), over the corpus of ``bench/perf.py`` (the real BFCL
functions, replicated with name suffixes):

* **tool vectors**: real all-MiniLM-L6-v2 embeddings (``bench/lib/embedder.py``, offline) of each BFCL function's
  embedding text (``hybrid.embedding_text.embedding_text``: name, description, group name and description); a
  replica ``{name}_r{k}`` gets its original's vector plus Gaussian noise (sigma 0.01 per dimension, seeded,
  then L2-normalized; cosine to the original about 0.98, as a renamed copy of a tool embeds), so the top 50 is not
  a block of exact ties;
* **query vectors**: the 50 keyword queries and 50 natural-language questions of ``bench/perf.py``, embedded
  once before timing: the timings exclude the embedder's own call (a cached query, as the proxy's query cache
  serves a repeated query);
* ``SearchIndex.search_hybrid(query, vector, None, 0, 5, 0.35)`` against ``SearchIndex.search(query, None, 0, 5)``
  on the same index, median and p95 per query;
* ``set_vectors`` of every tool, and the RSS the vectors add per tool (after a full collection and
  ``malloc_trim``);
* at the largest size, **loading the vectors from the persistent cache** (issue 22: <= 1 s at 100,000): every
  vector is written once into a fresh ``SQLiteEmbeddingStore`` file under its tool text's hash, then restarted
  processes (``bench/embedding_cache.py``) each time what a restart pays from "the index records exist" to "every
  tool has its vector in the Rust index": ``ToolVectors.follow`` (texts and fingerprints), the store's
  ``get_many``, the check and ``set_vector_rows``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

WEIGHT = 0.35
"""The fusion weight timed: `ToolProxyConfig.semantic_weight`'s default."""
SIGMA = 0.01


def base_vectors(base: Sequence[Any], descriptions: dict[str, str]) -> np.ndarray:
    """Embeddings of the BFCL functions' embedding texts (rows in `base` order)."""
    from bench.lib.embedder import embed_cached
    from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text

    texts = [embedding_text(f.domain, f.name, f.description, descriptions.get(f.domain, '')) for f in base]
    return embed_cached(texts, 'document')


def corpus_vectors(n: int, base: np.ndarray) -> np.ndarray:
    """`n` rows: `base`, then noisy copies (see the module docstring), in the order of `perf.corpus`."""
    rng = np.random.default_rng(22)
    rows = [base]
    while sum(len(r) for r in rows) < n:
        noisy = base + rng.normal(0.0, SIGMA, base.shape).astype(np.float32)
        rows.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
    return np.ascontiguousarray(np.concatenate(rows)[:n], dtype='<f4')


def measure(
    index: Any,
    keys: Sequence[str],
    vectors: np.ndarray,
    queries: Sequence[str],
    query_vectors: np.ndarray,
    per_query: Callable[[Callable[[str], Any], Sequence[str], int], tuple[float, float]],
    settled_rss: Callable[[], int],
    repeat: int,
) -> dict[str, Any]:
    """Attach `vectors` to `index` (a `SearchIndex` holding `keys`) and time both searches; returns set-up seconds,
    bytes per tool, (median, p95) ms of each search."""
    before = settled_rss()
    started = time.perf_counter()
    index.set_vectors(list(keys), vectors.tobytes(), vectors.shape[1])
    set_s = time.perf_counter() - started
    per_tool = (settled_rss() - before) / len(keys)
    qv = {q: query_vectors[i].astype('<f4').tobytes() for i, q in enumerate(queries)}
    hybrid = per_query(lambda q: index.search_hybrid(q, qv[q], None, 0, 5, WEIGHT), queries, repeat)
    keyword = per_query(lambda q: index.search(q, None, 0, 5), queries, repeat)
    return {
        'set_s': set_s,
        'per_tool': per_tool,
        'hybrid': hybrid,
        'keyword': keyword,
        'hybrid_cpu': cpu_per_query(lambda q: index.search_hybrid(q, qv[q], None, 0, 5, WEIGHT), queries, repeat),
        'keyword_cpu': cpu_per_query(lambda q: index.search(q, None, 0, 5), queries, repeat),
    }


def cpu_per_query(fn: Callable[[str], Any], queries: Sequence[str], repeat: int) -> tuple[float, float]:
    """(median, p95) CPU milliseconds of this thread per call (the ranking runs in the calling thread with the
    GIL released): unlike wall time, not inflated by other processes taking the CPU."""
    samples = []
    for _ in range(repeat):
        for q in queries:
            started = time.thread_time_ns()
            fn(q)
            samples.append((time.thread_time_ns() - started) / 1e6)
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def cache_load(keys: Sequence[str], vectors: np.ndarray, repeat: int = 5) -> dict[str, float]:
    """Issue 22's "loading 100,000 cached vectors": every tool's vector (`vectors[i]` for `keys[i]`) written into a
    fresh SQLite cache under its embedding text's hash, then `repeat` restarted processes
    (`bench/lib/vector_cache.py`'s `restart_loads`: `ToolVectors.follow` + the fill until every tool has its vector
    in the Rust index). Returns the medians (`total_s`, `follow_s`, `get_s`, `attach_s`, `cpu_s`), the worst
    total (`worst_s`), the write time and the file's bytes."""
    from bench.lib import vector_cache

    records, descriptions = vector_cache.corpus_records(len(keys))
    assert [r[0] for r in records] == list(keys), (
        'bench/lib/vector_cache.py builds another corpus than bench/lib/replicas.py'
    )
    hashes = vector_cache.text_hashes(records, descriptions)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'embeddings.sqlite3'
        write_s = vector_cache.write_cache(path, hashes, lambda i: vectors[i].astype('<f4').tobytes())
        figures = vector_cache.summary(vector_cache.restart_loads(path, len(keys), repeat))
        figures.update(write_s=write_s, bytes=path.stat().st_size)
    return figures
