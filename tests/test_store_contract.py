"""One contract for every embedding store: memory, SQLite and PostgreSQL (a real server these tests start).

Round trip, models never mix, bad vectors and hashes refused, hashes of the maximum length, claims (one owner a
text, expiry, release), 4 processes writing overlapping keys at once, and a store that goes away mid-run. The
PostgreSQL server is started by the `postgres` fixture (tests/postgres_server.py): never skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pydantic_ai_toolproxy.embedding_store import EmbeddingStore, MemoryEmbeddingStore, SQLiteEmbeddingStore
from pydantic_ai_toolproxy.hybrid.store_io import usable_vectors
from pydantic_ai_toolproxy.stores import ClaimingStore, describe_store, is_shared, supports_claims
from pydantic_ai_toolproxy.stores.postgres import PostgresEmbeddingStore

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / 'tests' / 'embedding_store_worker.py'
MODEL = 'test:contract:4'
KINDS = ['memory', 'sqlite', 'postgres']


def h(i: int) -> bytes:
    return hashlib.blake2b(f'text {i}'.encode(), digest_size=16).digest()


def v(i: int, dims: int = 4) -> bytes:
    return struct.pack(f'<{dims}f', *[float(i + k) for k in range(dims)])


@pytest.fixture(params=KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A factory of stores over one place (a second call: another handle on the same vectors, as another process
    would have; the memory store is one object)."""
    made: list[Any] = []
    if request.param == 'memory':
        shared = MemoryEmbeddingStore()

        def factory() -> Any:
            return shared
    elif request.param == 'sqlite':

        def factory() -> Any:
            made.append(SQLiteEmbeddingStore(tmp_path / 'vectors.sqlite3'))
            return made[-1]
    else:
        url = request.getfixturevalue('postgres_db')

        def factory() -> Any:
            made.append(PostgresEmbeddingStore(url, retry_after=0.2))
            return made[-1]

    factory.kind = request.param  # type: ignore[attr-defined]
    yield factory
    for store in made:
        store.close()


def test_round_trip_and_replacement(make_store: Callable[[], Any]) -> None:
    store = make_store()
    assert isinstance(store, EmbeddingStore)
    store.put_many(MODEL, {h(i): v(i) for i in range(50)})
    again = make_store()
    assert again.get_many(MODEL, [h(i) for i in range(60)]) == {h(i): v(i) for i in range(50)}
    again.put_many(MODEL, {h(0): v(99)})
    assert store.get_many(MODEL, [h(0)]) == {h(0): v(99)}
    assert store.get_many(MODEL, []) == {}
    assert store.get_many(MODEL, [h(1), h(1)]) == {h(1): v(1)}


def test_models_never_mix(make_store: Callable[[], Any]) -> None:
    store = make_store()
    store.put_many('a:model:native', {h(1): v(1)})
    store.put_many('b:model:native', {h(1): v(2, 8)})
    assert store.get_many('a:model:native', [h(1)]) == {h(1): v(1)}
    assert store.get_many('b:model:native', [h(1)]) == {h(1): v(2, 8)}
    assert store.get_many('c:model:native', [h(1)]) == {}


@pytest.mark.parametrize(
    ('model', 'items'),
    [
        ('', {b'h' * 16: bytes(4)}),
        (MODEL, {b'': bytes(4)}),
        (MODEL, {b'h' * 65: bytes(4)}),
        (MODEL, {b'h' * 16: b''}),
        (MODEL, {b'h' * 16: bytes(6)}),
        (MODEL, {b'h' * 16: 'text'}),
    ],
)
def test_bad_models_hashes_and_vectors_are_refused(make_store: Callable[[], Any], model: str, items: Any) -> None:
    store = make_store()
    with pytest.raises(ValueError):
        store.put_many(model, items)
    assert store.get_many(MODEL, [b'h' * 16]) == {}


def test_non_finite_and_wrong_size_vectors_are_dropped_by_the_pipeline(make_store: Callable[[], Any]) -> None:
    """A store returns bytes as stored; what the pipeline takes from it (`usable_vectors`) drops a NaN, an
    infinity and a vector of another dimensionality."""
    store = make_store()
    store.put_many(MODEL, {h(1): v(1), h(2): struct.pack('<4f', 1, float('nan'), 0, 0)})
    store.put_many(MODEL, {h(3): struct.pack('<4f', float('inf'), 0, 0, 0), h(4): v(4, 8)})
    usable, dropped = usable_vectors(store.get_many(MODEL, [h(i) for i in range(1, 5)]), [h(i) for i in range(1, 5)], 4)
    assert usable == {h(1): v(1)} and dropped == 3


def test_hashes_of_the_maximum_length(make_store: Callable[[], Any]) -> None:
    store = make_store()
    long = {bytes([i]) * 64: v(i) for i in range(1, 20)}
    store.put_many(MODEL, long)
    assert store.get_many(MODEL, list(long)) == long
    assert store.get_many(MODEL, [b'\x00' * 64]) == {}


def test_claims_one_owner_a_text_until_released_or_expired(make_store: Callable[[], Any]) -> None:
    first, second = make_store(), make_store()
    if make_store.kind == 'memory':  # type: ignore[attr-defined]
        second = MemoryEmbeddingStore()  # one process: claims hold between its threads; shown on another object
        assert not is_shared(first) and not supports_claims(first)
        first.put_many(MODEL, {h(0): v(0)})
        assert first.claim_many(MODEL, [h(0), h(1), h(2)], limit=1, seconds=30) == [h(1)]
        assert first.claim_many(MODEL, [h(1), h(2)], limit=5, seconds=30) == [h(2)]
        first.release_many(MODEL, [h(1)])
        assert first.claim_many(MODEL, [h(1)], limit=5, seconds=30) == [h(1)]
        return
    assert isinstance(first, ClaimingStore) and supports_claims(first)
    first.put_many(MODEL, {h(0): v(0)})
    wanted = [h(i) for i in range(10)]
    mine = first.claim_many(MODEL, wanted, limit=4, seconds=30)
    assert mine == [h(1), h(2), h(3), h(4)]  # in order, the stored one skipped
    theirs = second.claim_many(MODEL, wanted, limit=100, seconds=30)
    assert sorted(theirs) == sorted(h(i) for i in range(5, 10))  # never a text the first holds
    assert sorted(second.claim_many(MODEL, wanted, limit=100, seconds=30)) == sorted(theirs)  # its own: renewed
    first.put_many(MODEL, {h(1): v(1)})
    first.release_many(MODEL, mine)
    assert sorted(second.claim_many(MODEL, wanted, limit=100, seconds=30)) == sorted(
        [h(2), h(3), h(4), *theirs]
    )  # released texts are free again, the stored one is not
    short = make_store()
    assert short.claim_many(MODEL, [h(20)], limit=1, seconds=0.2) == [h(20)]
    assert second.claim_many(MODEL, [h(20)], limit=1, seconds=30) == []
    time.sleep(0.5)
    assert second.claim_many(MODEL, [h(20)], limit=1, seconds=30) == [h(20)]  # a crashed owner's claim expired
    with pytest.raises(ValueError):
        first.claim_many(MODEL, wanted, limit=0, seconds=30)
    with pytest.raises(ValueError):
        first.claim_many(MODEL, wanted, limit=1, seconds=-1)


def test_describe(make_store: Callable[[], Any]) -> None:
    store = make_store()
    store.put_many(MODEL, {h(1): v(1)})
    info = describe_store(store, MODEL)
    kind = make_store.kind  # type: ignore[attr-defined]
    assert info['kind'] == {'memory': 'memory', 'sqlite': 'file', 'postgres': 'postgres'}[kind]
    if kind != 'memory':
        assert info['vectors'] == 1 and info['fault'] is None


def run_worker(place: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), place, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize('kind', ['sqlite', 'postgres'])
def test_four_processes_write_overlapping_keys_at_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    place = str(tmp_path / 'v.sqlite3') if kind == 'sqlite' else request.getfixturevalue('postgres_db')
    count, batch, go = 2_000, 50, tmp_path / 'go'
    procs = [run_worker(place, 'worker', str(w), str(count), str(batch), str(go)) for w in range(4)]
    time.sleep(0.5)
    go.touch()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    per_worker = sum(min(start + batch, count) for start in range(0, count, batch))
    for report in reports:
        assert report == {'read': per_worker, 'wrong': 0, 'fell_back': False, 'fault': None, 'warnings': []}
    check = run_worker(place, 'read', str(3 * count // 2 + count))
    out, err = check.communicate(timeout=120)
    assert json.loads(out)['read'] == 3 * count // 2 + count, err


def test_postgres_going_away_mid_run_serves_memory_then_comes_back(
    postgres: Any, postgres_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = PostgresEmbeddingStore(postgres_db, retry_after=0.5, connect_timeout=2)
    store.put_many(MODEL, {h(1): v(1)})
    assert store.get_many(MODEL, [h(1)]) == {h(1): v(1)}
    postgres.stop_server()
    try:
        with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
            assert store.get_many(MODEL, [h(1)]) == {}  # nothing raises; the database's vectors are out of reach
            store.put_many(MODEL, {h(2): v(2)})  # kept in memory
            assert store.get_many(MODEL, [h(2)]) == {h(2): v(2)}
            assert store.claim_many(MODEL, [h(3)], limit=1, seconds=5) == [h(3)]
    finally:
        postgres.start_server()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert 'postgresql://postgres@' in warnings[0].getMessage()
    time.sleep(0.6)
    assert store.get_many(MODEL, [h(1), h(2)]) == {h(1): v(1), h(2): v(2)}  # the database again, memory beside it
    assert store.fault is None


def test_sqlite_going_away_mid_run_falls_back_to_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / 'v.sqlite3'
    store = SQLiteEmbeddingStore(path)
    store.put_many(MODEL, {h(1): v(1)})
    store.close()
    path.write_bytes(b'not a database any more' * 100)
    for suffix in ('-wal', '-shm'):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        assert store.get_many(MODEL, [h(1)]) == {}
        store.put_many(MODEL, {h(2): v(2)})
        assert store.get_many(MODEL, [h(2)]) == {h(2): v(2)}
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


# --- PostgreSQL faults: never a failed run, one warning without the password ------------------------------------


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy' and r.levelno >= 30]


def test_a_refused_login_serves_memory_with_one_warning_hiding_the_password(
    postgres: Any, postgres_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    postgres.psql("CREATE ROLE fleet LOGIN PASSWORD 'hunter2-secret'")
    hba = postgres.data / 'pg_hba.conf'
    original = hba.read_text()
    hba.write_text('local all fleet scram-sha-256\n' + original)
    postgres.psql('SELECT pg_reload_conf()')
    try:
        url = postgres.url(postgres_db.rsplit('/', 1)[1].split('?')[0], user='fleet', password='wrong-hunter2-secret')
        store = PostgresEmbeddingStore(url, retry_after=60)
        with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
            store.put_many(MODEL, {h(1): v(1)})
            assert store.get_many(MODEL, [h(1)]) == {h(1): v(1)}  # from memory
            assert store.get_many(MODEL, [h(2)]) == {}
        warnings = warnings_of(caplog)
        assert len(warnings) == 1 and 'password authentication failed' in warnings[0], warnings
        assert 'hunter2' not in warnings[0] and 'hunter2' not in repr(store)
        assert store.describe(MODEL)['vectors'] is None
        store.close()
    finally:
        hba.write_text(original)
        postgres.psql('SELECT pg_reload_conf()')


def test_a_read_only_database_still_answers_reads(
    postgres: Any, postgres_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    writer = PostgresEmbeddingStore(postgres_db)
    writer.put_many(MODEL, {h(1): v(1)})
    writer.close()
    name = postgres_db.rsplit('/', 1)[1].split('?')[0]
    postgres.psql(f'ALTER DATABASE {name} SET default_transaction_read_only = on')
    store = PostgresEmbeddingStore(postgres_db)
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        store.put_many(MODEL, {h(2): v(2)})  # refused: kept in memory
        store.put_many(MODEL, {h(3): v(3)})  # writes paused: no second warning
        assert store.get_many(MODEL, [h(1), h(2), h(3)]) == {h(1): v(1), h(2): v(2), h(3): v(3)}
    warnings = warnings_of(caplog)
    assert len(warnings) == 1 and 'refuses writes' in warnings[0], warnings
    store.close()


def test_tables_of_another_format_are_left_alone(
    postgres: Any, postgres_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    PostgresEmbeddingStore(postgres_db).put_many(MODEL, {h(1): v(1)})
    name = postgres_db.rsplit('/', 1)[1].split('?')[0]
    postgres.psql('UPDATE toolproxy_format SET version = 99', dbname=name)
    store = PostgresEmbeddingStore(postgres_db)
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        assert store.get_many(MODEL, [h(1)]) == {}
        store.put_many(MODEL, {h(2): v(2)})
    warnings = warnings_of(caplog)
    assert len(warnings) == 1 and 'format [99]' in warnings[0], warnings
    assert postgres.psql('SELECT count(*) FROM toolproxy_vectors', dbname=name).strip() == '1'  # untouched
    store.close()


def test_a_callers_pool_is_borrowed_never_closed(postgres_db: str) -> None:
    from psycopg_pool import ConnectionPool

    with ConnectionPool(postgres_db, min_size=1, max_size=2, open=True) as pool:
        store = PostgresEmbeddingStore(pool)
        store.put_many(MODEL, {h(1): v(1)})
        assert store.get_many(MODEL, [h(1)]) == {h(1): v(1)}
        store.close()
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute('SELECT count(*) FROM toolproxy_vectors').fetchone() == (1,)
            assert conn.execute('SHOW statement_timeout').fetchone() == ('0',)  # SET LOCAL only


def test_config_and_cli_settings_select_postgres(postgres_db: str) -> None:
    from pydantic_ai_toolproxy import ToolProxyConfig
    from pydantic_ai_toolproxy.cli._embedder import cache_setting
    from pydantic_ai_toolproxy.hybrid.store_io import open_store

    store = open_store(ToolProxyConfig(embedder='openai:text-embedding-3-small', embedding_cache=postgres_db))
    assert isinstance(store, PostgresEmbeddingStore)
    assert cache_setting(postgres_db, ROOT) == postgres_db
    with pytest.raises(ValueError, match='embedding_cache is not a valid PostgreSQL URL'):
        ToolProxyConfig(embedding_cache='postgresql://x/y?nonsense_option=1')
    with pytest.raises(ValueError, match=r'postgresql:// URL or a psycopg_pool\.ConnectionPool'):
        PostgresEmbeddingStore(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='retry_after'):
        PostgresEmbeddingStore(postgres_db, retry_after=0)


# --- claims under contention (found by a hostile pass) -----------------------------------------------------------


def test_postgres_claimers_in_opposite_orders_never_deadlock_nor_share_a_text(postgres_db: str) -> None:
    import threading

    hashes = [n.to_bytes(16, 'big') for n in range(3000)]
    for round_ in range(5):
        model = f'race:m{round_}:1'
        first, second = PostgresEmbeddingStore(postgres_db), PostgresEmbeddingStore(postgres_db)
        first.count(), second.count()
        out: dict[str, list[bytes]] = {}
        barrier = threading.Barrier(2)

        def claim(
            name: str, store: Any, order: list[bytes], model: str = model, barrier: Any = barrier, out: Any = out
        ) -> None:
            barrier.wait()
            out[name] = store.claim_many(model, order, limit=3000, seconds=60)

        threads = [
            threading.Thread(target=claim, args=('a', first, hashes)),
            threading.Thread(target=claim, args=('b', second, hashes[::-1])),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not set(out['a']) & set(out['b'])
        assert first.fault is None and second.fault is None
        first.close(), second.close()


def test_postgres_never_claims_a_text_stored_while_the_claim_waited(postgres_db: str) -> None:
    """Store 1's claim waits on a row another transaction holds; meanwhile store 2 claims A, stores it and releases
    it: store 1 must not come back with A."""
    import threading

    import psycopg

    model, a, b = 'snap:m:1', b'A' * 16, b'\x00' * 16  # b sorts first: the claim locks it first, and waits there
    first, second = PostgresEmbeddingStore(postgres_db), PostgresEmbeddingStore(postgres_db)
    first.count(), second.count()
    with psycopg.connect(postgres_db) as other:
        other.execute("INSERT INTO toolproxy_claims VALUES (%s, %s, 'other', now() + interval '60 s')", (model, b))
        out: dict[str, list[bytes]] = {}
        waiting = threading.Thread(
            target=lambda: out.setdefault('1', first.claim_many(model, [b, a], limit=64, seconds=60))
        )
        waiting.start()
        time.sleep(0.5)
        got = second.claim_many(model, [a], limit=64, seconds=60)
        second.put_many(model, {a: bytes(4)})
        second.release_many(model, got)
        time.sleep(0.2)
        other.commit()
        waiting.join()
    assert got == [a] and a not in out['1']
    first.close(), second.close()


def test_a_dropped_table_is_made_again(postgres: Any, postgres_db: str) -> None:
    store = PostgresEmbeddingStore(postgres_db, retry_after=0.2)
    store.put_many(MODEL, {h(1): v(1)})
    postgres.psql('DROP TABLE toolproxy_vectors', dbname=postgres_db.rsplit('/', 1)[1].split('?')[0])
    store.get_many(MODEL, [h(1)])  # the fault: one warning, a pause
    time.sleep(0.3)
    store.put_many(MODEL, {h(2): v(2)})
    assert store.get_many(MODEL, [h(2)]) == {h(2): v(2)} and store.fault is None
    store.close()


@pytest.mark.parametrize(
    'url',
    [
        'postgresql+psycopg://app:S3cr3t@db.internal/agents',
        'postgresql:/app:S3cr3t@db.internal/agents',
        'postgresql://app:S3cr3t%zz@db.internal/agents',
        'postgresql://app:S3cr3t@[db.internal/agents',
    ],
)
def test_urls_libpq_cannot_read_are_refused_without_the_password(url: str, tmp_path: Path, monkeypatch: Any) -> None:
    from pydantic_ai_toolproxy import ToolProxyConfig
    from pydantic_ai_toolproxy.stores import open_embedding_store
    from pydantic_ai_toolproxy.stores.opening import open_listing_store

    monkeypatch.chdir(tmp_path)
    for attempt in (
        lambda: ToolProxyConfig(embedding_cache=url),
        lambda: open_embedding_store(url),
        lambda: open_listing_store(url),
    ):
        with pytest.raises(ValueError) as raised:
            attempt()
        assert 'S3cr3t' not in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # no folder named after the URL


def test_passwords_never_show_in_reprs() -> None:
    from pydantic_ai_toolproxy import ToolProxyConfig
    from pydantic_ai_toolproxy.stores.postgres import safe_database_name

    for url in (
        'postgresql://app:S3cr3t@db.internal/agents',
        'postgresql://db.internal/agents?password=S3cr3t',
        'postgresql://app:p@S3cr3t@db.internal/agents',
        'postgresql://app:pa/S3cr3t@db.internal/agents',
    ):
        assert 'S3cr3t' not in repr(ToolProxyConfig(embedding_cache=url))
        assert 'S3cr3t' not in safe_database_name(url)
        assert 'S3cr3t' not in repr(PostgresEmbeddingStore(url))


@pytest.mark.parametrize('field', ['connect_timeout', 'statement_timeout', 'retry_after'])
@pytest.mark.parametrize('value', [0, -1, float('inf'), float('nan'), 1e12, True, '5'])
def test_timeouts_out_of_range_fail_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        PostgresEmbeddingStore('postgresql://db/agents', **{field: value})


def test_the_environment_may_name_a_database(monkeypatch: pytest.MonkeyPatch, postgres_db: str) -> None:
    from pydantic_ai_toolproxy.config import DEFAULT_EMBEDDING_CACHE
    from pydantic_ai_toolproxy.stores import open_embedding_store
    from pydantic_ai_toolproxy.stores.opening import open_listing_store
    from pydantic_ai_toolproxy.stores.postgres import PostgresListingStore

    monkeypatch.setenv('TOOLPROXY_EMBEDDING_CACHE', postgres_db)
    monkeypatch.setenv('TOOLPROXY_LISTING_CACHE', postgres_db)
    assert isinstance(open_embedding_store(DEFAULT_EMBEDDING_CACHE), PostgresEmbeddingStore)
    assert isinstance(open_listing_store('default'), PostgresListingStore)
    monkeypatch.setenv('TOOLPROXY_LISTING_CACHE', 'postgresql+psycopg://app:S3cr3t@db/agents')
    with pytest.raises(ValueError, match='TOOLPROXY_LISTING_CACHE') as raised:
        open_listing_store('default')
    assert 'S3cr3t' not in str(raised.value)
