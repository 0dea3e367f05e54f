"""Time to store and load tool vectors through `SQLiteEmbeddingStore` (issue 22: load 100,000 cached vectors <= 1 s).

Writes `--tools` vectors of `--dimensions` float32 (deterministic pseudo-random values; the store never looks
inside a vector, so their values do not change the timing) under one model into a fresh cache file, then opens the
file again in a fresh store and times `get_many` of every hash, the way a restarted process loads its tool
vectors. Prints the file size, the write time and the median / worst load time of `--repeat` loads (each load in a
fresh store, so nothing is served from the object; the OS page cache stays warm, as it is for a restart).

Run: `python bench/embedding_cache.py` (defaults: 100,000 tools, 384 dimensions, 5 loads); `--dimensions 1536`
for a provider-sized vector.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'python'))

from pydantic_ai_toolproxy.embedding_store import SQLiteEmbeddingStore  # noqa: E402

MODEL = 'bench:vectors'


def vectors(tools: int, dimensions: int) -> dict[bytes, bytes]:
    """`{16-byte text hash: little-endian float32 vector}` for `tools` synthetic tool texts."""
    rng = random.Random(22)
    one = array('f', (rng.uniform(-1, 1) for _ in range(dimensions * 64)))
    if sys.byteorder != 'little':  # pragma: no cover - the store's values are little-endian
        one.byteswap()
    block = one.tobytes()
    size = dimensions * 4
    return {
        hashlib.blake2b(f'tool {i}'.encode(), digest_size=16).digest(): block[(i % 64) * size : (i % 64 + 1) * size]
        for i in range(tools)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--tools', type=int, default=100_000)
    parser.add_argument('--dimensions', type=int, default=384)
    parser.add_argument('--repeat', type=int, default=5)
    args = parser.parse_args()
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
        loads = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            with SQLiteEmbeddingStore(path) as store:
                loaded = store.get_many(model, hashes)
            loads.append(time.perf_counter() - started)
            if loaded != items or store.fell_back:
                raise SystemExit(f'round trip failed: {len(loaded)} of {len(items)} vectors back, fault {store.fault}')
    print(f'embedding cache, {args.tools:,} vectors of {args.dimensions} dimensions ({size / 1e6:.1f} MB on disk)')
    print(f'  write (one put_many):          {write:.2f} s')
    print(f'  load (get_many, fresh store):  median {statistics.median(loads):.3f} s, worst {max(loads):.3f} s')


if __name__ == '__main__':
    main()
