"""Hybrid-search timings of the performance benchmark (``bench/perf.py`` calls :func:`measure`).

At each size (10,000 and 100,000 tools by default), over the corpus of ``bench/perf.py`` (the real BFCL
functions, replicated with name suffixes):

* **tool vectors**: real all-MiniLM-L6-v2 embeddings (``bench/embedder.py``, offline) of each BFCL function's
  embedding text (``_embedding_text.embedding_text``: name, description, group name and description); a
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
* at the largest size, **loading the vectors from the persistent cache**: every vector is written once into a
  fresh ``SQLiteEmbeddingStore`` file, then a new store on the same file (as a restarted process opens it) is
  timed for ``get_many`` of every text hash, then ``set_vectors`` of the rows: the time a process pays before
  its first hybrid search when every tool is cached.
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
    from embedder import embed_cached

    from pydantic_ai_toolproxy._embedding_text import embedding_text

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


def cache_load(index: Any, keys: Sequence[str], vectors: np.ndarray, repeat: int = 3) -> dict[str, float]:
    """Write every vector to a fresh SQLite cache, then time a new store's `get_many` of all of them and the
    `set_vectors` of the rows into `index` (its vectors cleared first), median of `repeat`; returns the seconds
    and the file's bytes."""
    import hashlib

    from pydantic_ai_toolproxy.embedding_store import SQLiteEmbeddingStore

    model = 'sentence-transformers:sentence-transformers/all-MiniLM-L6-v2:native'
    hashes = [hashlib.blake2b(key.encode(), digest_size=16).digest() for key in keys]
    rows = [vectors[i].tobytes() for i in range(len(keys))]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'embeddings.sqlite3'
        with SQLiteEmbeddingStore(path) as store:
            started = time.perf_counter()
            store.put_many(model, dict(zip(hashes, rows)))
            write_s = time.perf_counter() - started
        gets, sets = [], []
        for _ in range(repeat):
            index.clear_vectors()
            with SQLiteEmbeddingStore(path) as store:
                started = time.perf_counter()
                found = store.get_many(model, hashes)
                gets.append(time.perf_counter() - started)
            assert len(found) == len(keys), (len(found), len(keys))
            started = time.perf_counter()
            index.set_vectors(list(keys), b''.join(found[h] for h in hashes), vectors.shape[1])
            sets.append(time.perf_counter() - started)
        size = path.stat().st_size
    return {'write_s': write_s, 'get_s': statistics.median(gets), 'set_s': statistics.median(sets), 'bytes': size}
