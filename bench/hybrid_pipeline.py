"""What the Python side of hybrid search adds to an index build, at 10,000 and 100,000 tools (no embedder time).

    PYTHONPATH=python .venv/bin/python bench/hybrid_pipeline.py [--tools 100000] [--dimensions 384]

Prints, for synthetic tools (`group_i` x `tool_j` with a short description) and random unit vectors given as the
known vectors (as if read from the embedding store):
- `follow`: fingerprinting every upserted tool's embedding text (`ToolVectors.follow`, the first sync's extra);
- `apply`: attaching every vector to the index (`SearchIndex.set_vectors` in one call, through `ToolVectors.apply`);
- `reattach`: a fresh index getting all vectors back from memory (`follow` with every vector known);
- `set_vectors CPU`: the core's `SearchIndex.set_vectors` of every vector in one buffer, alone (process CPU time).
The rankings themselves are timed by the core's benchmarks.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from array import array

from pydantic_ai.embeddings import TestEmbeddingModel

from pydantic_ai_toolproxy import _core
from pydantic_ai_toolproxy._directory import index_record
from pydantic_ai_toolproxy._embedding_text import embedding_text, text_hash
from pydantic_ai_toolproxy.config import ToolProxyConfig
from pydantic_ai_toolproxy.hybrid.vectors import ToolVectors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--tools', type=int, nargs='*', default=[10_000, 100_000])
    parser.add_argument('--dimensions', type=int, default=384)
    args = parser.parse_args()
    rng = random.Random(7)
    for n in args.tools:
        groups = [f'group_{g}' for g in range(max(1, n // 500))]
        records = [
            index_record(
                f'{groups[i % len(groups)]}__tool_{i}', groups[i % len(groups)], f'Does thing {i} to items.', {}
            )
            for i in range(n)
        ]
        descriptions = {g: f'Group {g} of tools' for g in groups}
        index = _core.SearchIndex()
        for g, d in descriptions.items():
            index.set_group_description(g, d)
        index.upsert(records)
        vectors = ToolVectors(
            ToolProxyConfig(embedder=TestEmbeddingModel(), embedding_cache=None), descriptions, threading.Lock()
        )
        started = time.perf_counter()
        vectors.follow(index, records, [])
        follow = time.perf_counter() - started
        known = {}
        for _key, group, local, description, _ in records:
            fp = text_hash(embedding_text(group, local, description, descriptions[group]))
            v = [rng.gauss(0, 1) for _ in range(args.dimensions)]
            known[fp] = array('f', v).tobytes()
        started = time.perf_counter()
        with vectors.lock:
            vectors.apply(known)
        apply = time.perf_counter() - started
        fresh = _core.SearchIndex()
        fresh.upsert(records)
        started = time.perf_counter()
        vectors.follow(fresh, records, [])
        reattach = time.perf_counter() - started
        keys = [record[0] for record in records]
        buffer = b''.join(known.values())
        bare = _core.SearchIndex()
        bare.upsert(records)
        started = time.process_time()
        bare.set_vectors(keys, buffer, args.dimensions)
        set_cpu = time.process_time() - started
        print(
            f'{n:>7} tools x {args.dimensions} dims: follow {follow * 1000:7.1f} ms, apply {apply * 1000:7.1f} ms, '
            f'reattach {reattach * 1000:7.1f} ms, set_vectors CPU {set_cpu * 1000:7.1f} ms; '
            f'index vectors {fresh.vector_count()}'
        )


if __name__ == '__main__':
    main()
