"""`_core.SearchIndex` under threads: a large upsert (batches converted on the calling thread while a worker
thread indexes them) never deadlocks with readers, and a failed upsert changes nothing.

Each scenario runs in a subprocess with a timeout, so a deadlock fails the test instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pydantic_ai_toolproxy import _core

BATCH = 16 * 1024  # the binding's conversion batch: more records than this take the threaded path


def run_isolated(code: str, timeout: float = 60) -> str:
    try:
        done = subprocess.run(
            [sys.executable, '-c', textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:  # pragma: no cover - the failure this guards against
        pytest.fail(f'deadlock: the scenario did not finish within {timeout} s')
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize('reader', ['len(index)', 'index.keys()', 'repr(index)', "index.search('t1', None, 0, 5)"])
def test_readers_during_a_large_upsert_never_deadlock(reader: str) -> None:
    out = run_isolated(
        f"""
        import threading
        from pydantic_ai_toolproxy._core import SearchIndex
        index = SearchIndex()
        records = [(f'g__t{{i}}', 'g', f't{{i}}', 'a tool', {{'properties': {{'x': {{'type': 'string'}}}}}})
                   for i in range({3 * BATCH + 7})]
        stop = threading.Event()
        reads = []
        def read():
            while not stop.is_set():
                {reader}
                reads.append(1)
        threads = [threading.Thread(target=read) for _ in range(2)]
        for thread in threads:
            thread.start()
        index.upsert(records)
        stop.set()
        for thread in threads:
            thread.join()
        print(len(index), len(reads) > 0)
        """
    )
    assert out.split() == [str(3 * BATCH + 7), 'True']


def test_concurrent_large_upserts_and_removes_end_consistent() -> None:
    out = run_isolated(
        f"""
        import threading
        from pydantic_ai_toolproxy._core import SearchIndex
        index = SearchIndex()
        first = [(f'a__t{{i}}', 'a', f't{{i}}', 'first', {{}}) for i in range({2 * BATCH})]
        second = [(f'b__t{{i}}', 'b', f't{{i}}', 'second', {{}}) for i in range({2 * BATCH})]
        index.upsert([(f'c__t{{i}}', 'c', f't{{i}}', 'third', {{}}) for i in range(1000)])
        jobs = [
            threading.Thread(target=index.upsert, args=(first,)),
            threading.Thread(target=index.upsert, args=(second,)),
            threading.Thread(target=index.remove, args=([f'c__t{{i}}' for i in range(500)],)),
        ]
        for job in jobs:
            job.start()
        for job in jobs:
            job.join()
        keys = index.keys()
        print(len(index), len(keys), len(set(keys)), index.search('second', None, 0, 1)[0])
        """
    )
    assert out.split() == [str(4 * BATCH + 500)] * 3 + [str(2 * BATCH)]


def test_a_bad_record_anywhere_in_a_large_upsert_changes_nothing() -> None:
    index = _core.SearchIndex()
    index.upsert([('g__kept', 'g', 'kept', 'kept before', {})])
    records: list[object] = [(f'g__t{i}', 'g', f't{i}', 'new', {}) for i in range(2 * BATCH + 3)]
    wrong = [('g__x', 'g', 'x', 'no schema'), (b'g__x', 'g', 'x', 'bytes key', {}), None]
    for position, item in zip((0, BATCH - 1, BATCH, 2 * BATCH + 2), wrong * 2):
        bad = list(records)
        bad[position] = item
        with pytest.raises((TypeError, ValueError)):  # a 4-tuple is a ValueError, a wrong type a TypeError
            index.upsert(bad)
        assert index.keys() == ['g__kept']

    def failing() -> object:
        yield from records[: BATCH + 5]
        raise KeyError('source failed mid-way')

    with pytest.raises(KeyError):
        index.upsert(failing())
    assert index.keys() == ['g__kept']
