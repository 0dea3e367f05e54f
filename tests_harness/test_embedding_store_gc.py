"""On CPython 3.13 an unclosed `sqlite3.Connection` warns (ResourceWarning) when collected; this suite runs on
3.13 with warnings as errors, so a `SQLiteEmbeddingStore` a runtime drops without `close()` must close its own."""

from __future__ import annotations

import gc
import sqlite3
import sys
import warnings
from pathlib import Path

import pytest

from pydantic_ai_toolproxy import SQLiteEmbeddingStore


def test_an_unclosed_connection_warns_here() -> None:  # the premise: without the store's finalizer this would fail
    if sys.version_info < (3, 13):
        pytest.skip('CPython warns about unclosed sqlite3 connections from 3.13 on')
    conn = sqlite3.connect(':memory:')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        del conn
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) for w in caught)


def test_a_dropped_store_closes_its_connection(tmp_path: Path) -> None:
    path = tmp_path / 'c.sqlite3'
    store = SQLiteEmbeddingStore(path)
    store.put_many('test:model:native', {b'h' * 16: bytes(8)})
    assert Path(f'{path}-wal').exists()  # open, in WAL mode
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        del store
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not Path(f'{path}-wal').exists()  # the last connection closed: the log was checkpointed and removed
    with SQLiteEmbeddingStore(path) as again:
        assert again.get_many('test:model:native', [b'h' * 16]) == {b'h' * 16: bytes(8)}
