"""Time to store and load tool vectors through `SQLiteEmbeddingStore` (issue 22: load 100,000 cached vectors <= 1 s).

Run from the repository root: `PYTHONPATH=python .venv/bin/python -m bench.embedding_cache` (defaults: 100,000
tools, 384 dimensions, 5 runs); `--dimensions 1536` for a provider-sized vector, `--skip-store` for the restart
figure alone. The two measurements (a restart, end to end, in new processes; the store alone) are described in
`bench/lib/vector_cache.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.lib.vector_cache import (
    MODEL,
    corpus_records,
    describe,
    restart_loads,
    summary,
    text_hashes,
    vector_block,
    vectors,
    write_cache,
)
from pydantic_ai_toolproxy.embedding_store import SQLiteEmbeddingStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--tools', type=int, default=100_000)
    parser.add_argument('--dimensions', type=int, default=384)
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--skip-store', action='store_true', help='only the restart figure')
    args = parser.parse_args()
    load = os.getloadavg()
    print(f'load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}')
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'restart.sqlite3'
        records, descriptions = corpus_records(args.tools)
        hashes = text_hashes(records, descriptions)
        block, size = vector_block(args.dimensions), args.dimensions * 4
        write_cache(path, hashes, lambda i: block[(i % 64) * size : (i % 64 + 1) * size])
        loads = restart_loads(path, args.tools, args.repeat)
        print(describe(summary(loads), args.tools, len(loads)))
    if args.skip_store:
        return
    items = vectors(args.tools, args.dimensions)
    model = f'{MODEL}:{args.dimensions}'
    hashes = list(items)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'embeddings.sqlite3'
        started = time.perf_counter()
        with SQLiteEmbeddingStore(path) as store:
            store.put_many(model, items)
        write = time.perf_counter() - started
        size = path.stat().st_size + sum(p.stat().st_size for p in path.parent.glob('*-wal'))
        gets = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            with SQLiteEmbeddingStore(path) as store:
                loaded = store.get_many(model, hashes)
            gets.append(time.perf_counter() - started)
            if loaded != items or store.fell_back:
                raise SystemExit(f'round trip failed: {len(loaded)} of {len(items)} vectors back, fault {store.fault}')
    print(f'embedding cache, {args.tools:,} vectors of {args.dimensions} dimensions ({size / 1e6:.1f} MB on disk)')
    print(f'  write (one put_many):          {write:.2f} s')
    print(f'  load (get_many, fresh store):  median {statistics.median(gets):.3f} s, worst {max(gets):.3f} s')


if __name__ == '__main__':
    main()
