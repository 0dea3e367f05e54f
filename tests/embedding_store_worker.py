"""A process that uses one embedding store, for tests/test_embedding_store.py and tests/test_store_contract.py
(real processes on one SQLite file, or one PostgreSQL database when PATH is a `postgresql://` URL).

`python embedding_store_worker.py PATH MODE ...` prints one JSON object on stdout:
`{"fell_back", "fault", "warnings": [messages logged on 'pydantic_ai_toolproxy'], ...}` plus what the mode adds.

Modes:
- `put-get N`: store vectors 0..N-1 (`vector_of`), then read them back: `"read"` = how many came back equal.
- `read N`: read vectors 0..N-1: `"read"` = how many came back equal to `vector_of`.
- `worker ID N BATCH GO`: wait until the file GO exists, then store vectors ID*N/2 .. ID*N/2+N-1 in batches of
  BATCH (so neighbouring workers overlap by half), reading back each batch and every vector stored so far by
  this worker after each batch; `"read"` = vectors read back equal, `"wrong"` = vectors read back different.
- `hold SECONDS`: take an exclusive lock on PATH, print `locked`, hold it SECONDS (or until stdin closes when 0).
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import sys
import time
from pathlib import Path
from typing import Any

from pydantic_ai_toolproxy.stores import open_embedding_store

MODEL = 'test:worker:4'


def hash_of(i: int) -> bytes:
    """The 16-byte text hash of synthetic tool `i`."""
    return hashlib.blake2b(f'tool {i}'.encode(), digest_size=16).digest()


def vector_of(i: int) -> bytes:
    """Tool `i`'s 4-dimensional little-endian float32 vector (the same in every process)."""
    return struct.pack('<4f', i, -i, i / 7, 1.0)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def equal_count(found: dict[bytes, bytes], ids: range) -> tuple[int, int]:
    right = sum(found.get(hash_of(i)) == vector_of(i) for i in ids)
    return right, sum(hash_of(i) in found for i in ids) - right


def main() -> None:
    path, mode, *args = sys.argv[1:]
    collect = Collect()
    logging.getLogger('pydantic_ai_toolproxy').addHandler(collect)
    out: dict[str, object] = {}
    if mode == 'hold':
        import sqlite3

        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute('PRAGMA locking_mode=EXCLUSIVE')
        conn.execute('BEGIN EXCLUSIVE')
        print('locked', flush=True)
        if float(args[0]) > 0:
            time.sleep(float(args[0]))
        else:
            sys.stdin.read()
        conn.execute('COMMIT')
        conn.close()
        return
    store: Any = open_embedding_store(path)  # a file, or a postgresql:// URL
    if mode == 'put-get':
        ids = range(int(args[0]))
        store.put_many(MODEL, {hash_of(i): vector_of(i) for i in ids})
        out['read'], out['wrong'] = equal_count(store.get_many(MODEL, [hash_of(i) for i in ids]), ids)
    elif mode == 'read':
        ids = range(int(args[0]))
        out['read'], out['wrong'] = equal_count(store.get_many(MODEL, [hash_of(i) for i in ids]), ids)
    elif mode == 'worker':
        worker, count, batch, go = int(args[0]), int(args[1]), int(args[2]), Path(args[3])
        while not go.exists():
            time.sleep(0.005)
        first = worker * count // 2
        read = wrong = 0
        for start in range(first, first + count, batch):
            ids = range(start, min(start + batch, first + count))
            store.put_many(MODEL, {hash_of(i): vector_of(i) for i in ids})
            so_far = range(first, ids.stop)
            right, bad = equal_count(store.get_many(MODEL, [hash_of(i) for i in so_far]), so_far)
            read, wrong = read + right, wrong + bad
        out['read'], out['wrong'] = read, wrong
    else:
        raise SystemExit(f'unknown mode {mode!r}')
    store.close()
    out.update(
        fell_back=getattr(store, 'fell_back', store.fault is not None), fault=store.fault, warnings=collect.messages
    )
    print(json.dumps(out))


if __name__ == '__main__':
    main()
