"""`EmbeddingStore`, `SQLiteEmbeddingStore` and `MemoryEmbeddingStore`: round trips, faults, several processes.

Every fault is a real file in a real state (garbage bytes, damaged pages, chmod read-only file or directory,
another process holding an exclusive lock, another format, another application's SQLite file); each must fall back
to memory with exactly one warning on the `pydantic_ai_toolproxy` logger and never raise. Processes are real
subprocesses (tests/embedding_store_worker.py); when the suite runs as root (who ignores file modes), the
read-only cases run their process without root's override of file modes. A real `Agent` run over an unusable
cache file still searches by meaning (vectors kept in memory) with one warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pydantic_ai_toolproxy import EmbeddingStore, MemoryEmbeddingStore, SQLiteEmbeddingStore
from pydantic_ai_toolproxy.embedding_store import CACHE_ENV, FORMAT_VERSION, default_embedding_cache_path
from pydantic_ai_toolproxy.stores.sqlite import APPLICATION_ID

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / 'tests' / 'embedding_store_worker.py'
MODEL = 'test:worker:4'
LOGGER = 'pydantic_ai_toolproxy'

sys.path.insert(0, str(ROOT / 'tests'))
from embedding_store_worker import hash_of, vector_of  # noqa: E402


def items(ids: range) -> dict[bytes, bytes]:
    return {hash_of(i): vector_of(i) for i in ids}


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


def run_worker(path: Path, *args: str, file_modes_apply: bool = False) -> dict[str, Any]:
    """Run the worker in a fresh process; its JSON report.

    `file_modes_apply`: when the suite runs as root, run the worker without the capabilities that let root ignore
    file modes (`setpriv`, util-linux), so a chmod read-only file or directory is read-only to it as to anyone.
    """
    prefix: list[str] = []
    if file_modes_apply and os.geteuid() == 0:
        setpriv = shutil.which('setpriv')
        if setpriv is None:
            pytest.skip('running as root without setpriv: file modes cannot be made to apply')
        prefix = [setpriv, '--bounding-set=-dac_override,-dac_read_search', '--']
    proc = subprocess.run(
        [*prefix, sys.executable, str(WORKER), str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def filled_cache(path: Path, count: int = 50) -> bytes:
    """A valid cache file holding vectors 0..count-1, closed; returns its bytes."""
    with SQLiteEmbeddingStore(path) as store:
        store.put_many(MODEL, items(range(count)))
        assert not store.fell_back
    return path.read_bytes()


def assert_fell_back_once(store: SQLiteEmbeddingStore, caplog: pytest.LogCaptureFixture, reason: str) -> None:
    """The store works from memory after the fault, raised nothing, and warned exactly once naming path and reason."""
    for _ in range(3):  # further calls after the fault: served from memory, no second warning
        store.put_many(MODEL, items(range(1000, 1010)))
        assert store.get_many(MODEL, [hash_of(1000), hash_of(1009), hash_of(5000)]) == items(range(1000, 1010, 9))
    assert store.fell_back
    assert store.fault is not None and reason in store.fault
    found = warnings_of(caplog)
    assert len(found) == 1, found
    assert str(store.path) in found[0] and reason in found[0] and 'kept in memory' in found[0]


# --- the interface and the memory store


def test_both_stores_are_embedding_stores(tmp_path: Path) -> None:
    assert isinstance(MemoryEmbeddingStore(), EmbeddingStore)
    assert isinstance(SQLiteEmbeddingStore(tmp_path / 'c.sqlite3'), EmbeddingStore)
    assert not (tmp_path / 'c.sqlite3').exists()  # opened on first use, not at construction


@pytest.mark.parametrize('kind', ['memory', 'sqlite'])
def test_round_trip_models_apart_and_replacement(kind: str, tmp_path: Path) -> None:
    store: MemoryEmbeddingStore | SQLiteEmbeddingStore = (
        MemoryEmbeddingStore() if kind == 'memory' else SQLiteEmbeddingStore(tmp_path / 'c.sqlite3')
    )
    store.put_many(MODEL, items(range(10)))
    store.put_many('other:model:4', {hash_of(3): struct.pack('<4f', 9, 9, 9, 9)})
    asked = [hash_of(i) for i in (0, 3, 9, 10, 3)]  # 10 has none; 3 asked twice
    assert store.get_many(MODEL, asked) == {hash_of(i): vector_of(i) for i in (0, 3, 9)}
    assert store.get_many('other:model:4', asked) == {hash_of(3): struct.pack('<4f', 9, 9, 9, 9)}
    assert store.get_many('never:stored:4', asked) == {}
    assert store.get_many(MODEL, []) == {}
    store.put_many(MODEL, {hash_of(0): struct.pack('<4f', 1, 2, 3, 4)})  # replaced
    assert store.get_many(MODEL, [hash_of(0)]) == {hash_of(0): struct.pack('<4f', 1, 2, 3, 4)}
    assert store.count(MODEL) == 10 and store.count() == 11
    store.put_many(MODEL, {})


@pytest.mark.parametrize('kind', ['memory', 'sqlite'])
def test_caller_errors_raise_value_error(kind: str, tmp_path: Path) -> None:
    store: MemoryEmbeddingStore | SQLiteEmbeddingStore = (
        MemoryEmbeddingStore() if kind == 'memory' else SQLiteEmbeddingStore(tmp_path / 'c.sqlite3')
    )
    with pytest.raises(ValueError, match='model must be a non-empty str'):
        store.get_many('', [hash_of(0)])
    with pytest.raises(ValueError, match='hash must be 1-64 bytes'):
        store.get_many(MODEL, ['text, not a hash'])  # type: ignore[list-item]
    with pytest.raises(ValueError, match='hash must be 1-64 bytes'):
        store.put_many(MODEL, {b'': vector_of(0)})
    with pytest.raises(ValueError, match='a multiple of 4'):
        store.put_many(MODEL, {hash_of(0): b'\x00\x00\x00'})
    with pytest.raises(ValueError, match='float32 bytes'):
        store.put_many(MODEL, {hash_of(0): [1.0, 2.0]})  # type: ignore[dict-item]
    assert store.get_many(MODEL, [hash_of(0)]) == {}  # nothing of a rejected batch was stored


def test_sqlite_store_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match='non-empty str or path'):
        SQLiteEmbeddingStore('')
    for timeout in (0, -1.0, True, 'soon'):
        with pytest.raises(ValueError, match='timeout must be a positive number'):
            SQLiteEmbeddingStore('x.sqlite3', timeout=timeout)  # type: ignore[arg-type]


# --- the file


def test_vectors_persist_across_stores_and_processes(tmp_path: Path) -> None:
    path = tmp_path / 'deep' / 'er' / 'c.sqlite3'  # the directory is created
    report = run_worker(path, 'put-get', '300')
    assert report == {'read': 300, 'wrong': 0, 'fell_back': False, 'fault': None, 'warnings': []}
    with SQLiteEmbeddingStore(path) as store:
        assert store.get_many(MODEL, [hash_of(i) for i in range(300)]) == items(range(300))
        store.put_many(MODEL, items(range(300, 400)))
    assert run_worker(path, 'read', '400')['read'] == 400


def test_the_file_holds_hashes_and_vectors_only(tmp_path: Path) -> None:
    path = tmp_path / 'c.sqlite3'
    filled_cache(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute('PRAGMA application_id').fetchone()[0] == APPLICATION_ID
        assert conn.execute('PRAGMA user_version').fetchone()[0] == FORMAT_VERSION
        assert conn.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        assert tables == ['claims', 'models', 'vectors']
        assert [r[1] for r in conn.execute('PRAGMA table_info(claims)')] == ['model', 'hash', 'owner', 'expires']
        assert [r[1] for r in conn.execute('PRAGMA table_info(vectors)')] == ['model', 'hash', 'vector']
        assert [r[1] for r in conn.execute('PRAGMA table_info(models)')] == ['id', 'name']
        assert [r[0] for r in conn.execute('SELECT name FROM models')] == [MODEL]
        rows = conn.execute('SELECT hash, vector FROM vectors ORDER BY rowid').fetchall()
    finally:
        conn.close()
    assert rows == list(items(range(50)).items())


def test_100000_vectors_of_384_dimensions_round_trip(tmp_path: Path) -> None:
    path = tmp_path / 'c.sqlite3'
    model = 'test:big:384'
    base = bytes(range(256)) * 6  # 1,536 bytes = 384 float32
    stored = {
        hashlib.blake2b(b'%d' % i, digest_size=16).digest(): base[i % 256 :] + base[: i % 256] for i in range(100_000)
    }
    with SQLiteEmbeddingStore(path) as store:
        store.put_many(model, stored)
    with SQLiteEmbeddingStore(path) as store:
        started = time.perf_counter()
        loaded = store.get_many(model, list(stored))
        took = time.perf_counter() - started
        assert not store.fell_back and store.count(model) == 100_000
    assert loaded == stored
    assert took < 10  # the figure (target <= 1 s) is `python -m bench.embedding_cache`'s; this only catches a cliff


@pytest.mark.parametrize('asked', [2_500, 2_050, 100])  # a scan in file order; index lookups (under half the rows)
def test_big_and_small_lookups_return_exactly_the_models_vectors(tmp_path: Path, asked: int) -> None:
    path = tmp_path / 'c.sqlite3'
    with SQLiteEmbeddingStore(path) as store:
        store.put_many(MODEL, items(range(3_000)))
        store.put_many('other:model:4', {hash_of(i): struct.pack('<4f', 7, 7, 7, i) for i in range(1_000)})
        store.put_many('other:model:4', {hash_of(i): struct.pack('<4f', 8, 8, 8, i) for i in range(5_000, 5_200)})
        wanted = [hash_of(i) for i in range(asked)] + [hash_of(9_999)]  # one hash without a vector
        assert store.get_many(MODEL, wanted) == items(range(asked))
        other = store.get_many('other:model:4', wanted)
        assert other == {hash_of(i): struct.pack('<4f', 7, 7, 7, i) for i in range(min(asked, 1_000))}


def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    path = tmp_path / 'c.sqlite3'
    store = SQLiteEmbeddingStore(path)
    store.put_many(MODEL, items(range(10)))
    pid = os.fork()
    if pid == 0:  # the child: write and read through the inherited object, report by exit status
        try:
            store.put_many(MODEL, items(range(10, 20)))
            ok = store.get_many(MODEL, [hash_of(i) for i in range(20)]) == items(range(20)) and not store.fell_back
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.get_many(MODEL, [hash_of(i) for i in range(20)]) == items(range(20))
    assert not store.fell_back
    store.close()


def test_several_processes_write_and_read_one_file_at_once(tmp_path: Path) -> None:
    path, go = tmp_path / 'shared.sqlite3', tmp_path / 'go'
    count, batch, workers = 2_000, 50, 4
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(path), 'worker', str(w), str(count), str(batch), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)},
        )
        for w in range(workers)
    ]
    go.touch()  # every worker creates the (missing) file's schema and writes at once
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    per_worker = sum(min(start + batch, count) for start in range(0, count, batch))  # reads after each batch
    for report in reports:
        assert report == {'read': per_worker, 'wrong': 0, 'fell_back': False, 'fault': None, 'warnings': []}
    total = range((workers - 1) * count // 2 + count)
    with SQLiteEmbeddingStore(path) as store:
        assert store.get_many(MODEL, [hash_of(i) for i in total]) == items(total)
        assert store.count() == len(total)


# --- faults: each falls back to memory with one warning, raises nothing, and leaves the file as it was


def test_garbage_bytes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'c.sqlite3'
    garbage = b'this is no database\n' * 500
    path.write_bytes(garbage)
    store = SQLiteEmbeddingStore(path)
    assert store.get_many(MODEL, [hash_of(0)]) == {}
    assert_fell_back_once(store, caplog, 'file is not a database')
    assert path.read_bytes() == garbage


def test_damaged_pages_of_a_valid_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'c.sqlite3'
    good = filled_cache(path, 2_000)
    page = 32_768
    assert len(good) > 4 * page
    damaged = good[: 2 * page] + b'\xa5' * (len(good) - 2 * page)  # header and first pages intact, the rest noise
    path.write_bytes(damaged)
    store = SQLiteEmbeddingStore(path)
    assert store.get_many(MODEL, [hash_of(i) for i in range(2_000)]) == {}
    assert_fell_back_once(store, caplog, 'malformed')
    assert path.read_bytes() == damaged


def test_another_format_version(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'c.sqlite3'
    filled_cache(path)
    conn = sqlite3.connect(path)
    conn.execute(f'PRAGMA user_version={FORMAT_VERSION + 1}')
    conn.close()
    before = path.read_bytes()
    store = SQLiteEmbeddingStore(path)
    assert store.get_many(MODEL, [hash_of(0)]) == {}  # its vectors are not read: the format may mean otherwise
    assert_fell_back_once(
        store, caplog, f'cache format {FORMAT_VERSION + 1}, this version reads format {FORMAT_VERSION}'
    )
    assert path.read_bytes() == before


def test_a_sqlite_file_of_another_application(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'app.db'
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE users (name TEXT)')
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    store = SQLiteEmbeddingStore(path)
    store.put_many(MODEL, items(range(5)))
    assert_fell_back_once(store, caplog, 'another application')
    assert path.read_bytes() == before


def test_another_model_is_not_a_fault(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'c.sqlite3'
    filled_cache(path)
    with SQLiteEmbeddingStore(path) as store:
        assert store.get_many('test:other-model:4', [hash_of(0)]) == {}
        store.put_many('test:other-model:4', {hash_of(0): struct.pack('<4f', 5, 5, 5, 5)})
        assert store.get_many(MODEL, [hash_of(0)]) == {hash_of(0): vector_of(0)}
        assert not store.fell_back
    assert warnings_of(caplog) == []


def test_locked_by_another_process(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'c.sqlite3'
    filled_cache(path)
    holder = subprocess.Popen(
        [sys.executable, str(WORKER), str(path), 'hold', '0'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == 'locked\n'
        store = SQLiteEmbeddingStore(path, timeout=0.3)
        started = time.perf_counter()
        assert store.get_many(MODEL, [hash_of(0)]) == {}
        assert time.perf_counter() - started < 5  # waited about `timeout`, then gave up
        assert_fell_back_once(store, caplog, 'locked')
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    assert holder.returncode == 0
    with SQLiteEmbeddingStore(path) as store:  # once released, the next store uses the file again
        assert store.get_many(MODEL, [hash_of(0)]) == {hash_of(0): vector_of(0)}


def test_a_lock_released_within_the_timeout_is_waited_for(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'c.sqlite3'
    filled_cache(path)
    holder = subprocess.Popen(
        [sys.executable, str(WORKER), str(path), 'hold', '0.5'],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)},
    )
    assert holder.stdout is not None and holder.stdout.readline() == 'locked\n'
    with SQLiteEmbeddingStore(path, timeout=30) as store:
        store.put_many(MODEL, items(range(50, 60)))
        assert not store.fell_back
    assert holder.wait(timeout=30) == 0
    holder.stdout.close()
    assert warnings_of(caplog) == []
    assert run_worker(path, 'read', '60')['read'] == 60


def test_read_only_file(tmp_path: Path) -> None:
    path = tmp_path / 'c.sqlite3'
    before = filled_cache(path)
    path.chmod(0o444)
    report = run_worker(path, 'put-get', '60', file_modes_apply=True)
    assert report['fell_back'] is True and report['fault'] == 'the file is read-only'
    assert report['read'] == 60  # served from memory
    assert len(report['warnings']) == 1 and str(path) in report['warnings'][0]
    assert path.read_bytes() == before


def test_read_only_directory(tmp_path: Path) -> None:
    new = tmp_path / 'locked-dir' / 'c.sqlite3'
    new.parent.mkdir()
    new.parent.chmod(0o555)
    report = run_worker(new, 'put-get', '20', file_modes_apply=True)
    assert report['fell_back'] is True and report['fault'] == f'the directory {new.parent} is read-only'
    assert report['read'] == 20 and len(report['warnings']) == 1
    assert not new.exists()
    missing_parent = tmp_path / 'locked-dir' / 'sub' / 'c.sqlite3'  # the directory cannot even be created
    report = run_worker(missing_parent, 'put-get', '20', file_modes_apply=True)
    assert report['fell_back'] is True and 'Permission denied' in report['fault']
    assert report['read'] == 20 and len(report['warnings']) == 1


# --- the default path


def test_default_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    assert default_embedding_cache_path() == tmp_path / 'pydantic-ai-toolproxy' / 'embeddings.sqlite3'
    monkeypatch.setenv('XDG_CACHE_HOME', 'relative/is/ignored')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    assert (
        default_embedding_cache_path() == tmp_path / 'home' / '.cache' / 'pydantic-ai-toolproxy' / 'embeddings.sqlite3'
    )
    monkeypatch.delenv('XDG_CACHE_HOME')
    assert (
        default_embedding_cache_path() == tmp_path / 'home' / '.cache' / 'pydantic-ai-toolproxy' / 'embeddings.sqlite3'
    )
    monkeypatch.setenv(CACHE_ENV, '~/vectors.db')
    assert default_embedding_cache_path() == tmp_path / 'home' / 'vectors.db'
    for off in ('off', 'OFF', ' off '):
        monkeypatch.setenv(CACHE_ENV, off)
        assert default_embedding_cache_path() is None
    monkeypatch.setenv(CACHE_ENV, '')
    assert (
        default_embedding_cache_path() == tmp_path / 'home' / '.cache' / 'pydantic-ai-toolproxy' / 'embeddings.sqlite3'
    )


# --- a real run over a cache that cannot be used


@pytest.mark.parametrize('fault', ['garbage', 'other-format'])
async def test_an_agent_run_over_an_unusable_cache_searches_by_meaning_with_one_warning(
    fault: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from cli_embedders import DIMENSIONS, SYNONYMS, tool_groups
    from embedding_fixtures import BagOfWordsModel
    from pydantic_ai import Agent
    from support import SEARCH, Script, returns

    from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

    path = tmp_path / 'c.sqlite3'
    if fault == 'garbage':
        path.write_bytes(b'\x00garbage' * 4096)
    else:
        filled_cache(path)
        conn = sqlite3.connect(path)
        conn.execute(f'PRAGMA user_version={FORMAT_VERSION + 7}')
        conn.close()
    before = path.read_bytes()
    model = BagOfWordsModel(dimensions=DIMENSIONS, synonyms=SYNONYMS)
    proxy = ToolProxyCapability(
        groups={name: ToolProxyGroup(source=ts, description=d) for name, (ts, d) in tool_groups().items()},
        config=ToolProxyConfig(embedder=model, embedding_cache=str(path), embedding_wait=60),
    )
    query = {'query': 'should I bring an umbrella', 'limit': 2}
    script = Script([[(SEARCH, query)], [(SEARCH, query)], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    pages = [json.loads(p.model_response_str()) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert result.output == 'done'
    assert [p['tools'][0]['tool'] for p in pages] == ['get_forecast', 'get_forecast']  # by meaning, both searches
    assert len(model.documents()) == 7  # each tool embedded once, kept in memory after the fallback
    store_warnings = [m for m in warnings_of(caplog) if 'embedding cache' in m]
    assert len(store_warnings) == 1 and str(path) in store_warnings[0]
    assert path.read_bytes() == before
