"""PostgreSQL stores: one database shared by a fleet of workers on many machines (the `postgres` extra, psycopg 3).

- `PostgresEmbeddingStore(url_or_pool)`: tool vectors (`toolproxy_vectors`: model, hash, vector; never a tool's
  text), the claims of texts being embedded (`toolproxy_claims`), and the format (`toolproxy_format`).
- `PostgresListingStore(url_or_pool)`: MCP listings (`toolproxy_mcp_listings`: key, entry JSON, stored_at).

Both take a `postgresql://` URL (the store opens one connection per process, on first use, and reopens it after a
fault or an `os.fork`) or a caller-owned `psycopg_pool.ConnectionPool`, which the store borrows connections from
and never closes. Tables are created when absent (under an advisory lock, so workers starting together do not
race); a `toolproxy_format` row of another version makes the store unusable (memory instead, one warning).

Faults never fail a run: a database that is unreachable, goes away mid-run, refuses the login, is read-only, or
holds tables of another format makes the store serve what it can (a read-only database still answers reads; what
could not be written is kept in memory and served from there), log one warning on the `pydantic_ai_toolproxy`
logger naming the database without its password, and try the database again `retry_after` seconds later. Every
statement runs under `statement_timeout` seconds (`SET LOCAL`, so a caller's pool keeps its own settings).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from psycopg import conninfo as pg_conninfo
from psycopg_pool import ConnectionPool

from .._urls import redacted
from ._checks import check_claim, check_hashes, check_items, check_model
from .listings import ServerListing
from .memory import MemoryEmbeddingStore

__all__ = ('FORMAT_VERSION', 'PostgresEmbeddingStore', 'PostgresListingStore', 'safe_database_name')

logger = logging.getLogger('pydantic_ai_toolproxy')

T = TypeVar('T')

FORMAT_VERSION = 1
"""The tables' format (the one row of `toolproxy_format`); a database of another format is left alone."""
READ_CHUNK = 50_000
"""Hashes asked for per `SELECT ... WHERE hash = ANY(...)` (100,000 vectors load in two round trips)."""
SCAN_AT = 2_000
"""From this many hashes on, a lookup that asks for at least half of the model's rows reads all of them in one
pass (no index probe per hash) and drops the rows nobody asked for."""
WRITE_CHUNK = 10_000
"""Rows per `INSERT ... SELECT FROM unnest(...)` (about 15 MB of 384-dimension vectors)."""
_KEEPALIVES = {'keepalives': 1, 'keepalives_idle': 10, 'keepalives_interval': 5, 'keepalives_count': 3}
"""libpq's TCP keepalive settings of the store's own connection: a peer that vanished is noticed in about 25 s."""
_LOCK_ID = 0x54505843
"""`pg_advisory_xact_lock` key held while the tables are created ('TPXC')."""

_SCHEMA = (
    'CREATE TABLE IF NOT EXISTS toolproxy_format (version integer NOT NULL)',
    'CREATE TABLE IF NOT EXISTS toolproxy_vectors ('
    'model text NOT NULL, hash bytea NOT NULL, vector bytea NOT NULL, PRIMARY KEY (model, hash))',
    'CREATE TABLE IF NOT EXISTS toolproxy_claims ('
    'model text NOT NULL, hash bytea NOT NULL, owner text NOT NULL, expires timestamptz NOT NULL, '
    'PRIMARY KEY (model, hash))',
    'CREATE TABLE IF NOT EXISTS toolproxy_mcp_listings ('
    'key text PRIMARY KEY, entry text NOT NULL, stored_at timestamptz NOT NULL DEFAULT now())',
)
_TABLES = ('toolproxy_format', 'toolproxy_vectors', 'toolproxy_claims', 'toolproxy_mcp_listings')

_UPSERT = (
    'INSERT INTO toolproxy_vectors AS t (model, hash, vector) '
    'SELECT %s, h, v FROM unnest(%b::bytea[], %b::bytea[]) AS u(h, v) '
    'ON CONFLICT (model, hash) DO UPDATE SET vector = EXCLUDED.vector WHERE t.vector IS DISTINCT FROM EXCLUDED.vector'
)
_CLAIM = (
    'WITH free AS ('
    'SELECT w.h, w.n FROM unnest(%(hashes)b::bytea[]) WITH ORDINALITY AS w(h, n) '
    'WHERE NOT EXISTS (SELECT 1 FROM toolproxy_vectors v WHERE v.model = %(model)s AND v.hash = w.h) '
    'AND NOT EXISTS (SELECT 1 FROM toolproxy_claims k WHERE k.model = %(model)s AND k.hash = w.h '
    'AND k.expires > now() AND k.owner <> %(owner)s) '
    'ORDER BY w.n LIMIT %(limit)s) '
    'INSERT INTO toolproxy_claims AS c (model, hash, owner, expires) '
    "SELECT %(model)s, h, %(owner)s, now() + %(seconds)s * interval '1 second' FROM free ORDER BY h "
    'ON CONFLICT (model, hash) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires '
    'WHERE c.expires <= now() OR c.owner = EXCLUDED.owner '
    'RETURNING hash'
)
"""Claim the first `limit` free hashes, rows locked in hash order (as `put_many` writes), so claimers never
deadlock each other."""
_UNCLAIM_STORED = (
    'DELETE FROM toolproxy_claims c WHERE c.model = %(model)s AND c.owner = %(owner)s AND c.hash = ANY(%(hashes)b) '
    'AND EXISTS (SELECT 1 FROM toolproxy_vectors v WHERE v.model = %(model)s AND v.hash = c.hash) RETURNING c.hash'
)
"""Run right after `_CLAIM`, with a snapshot of its own: a text another process stored while this claim waited on
its row lock (the claim saw the older snapshot) is not kept."""
_BUSY = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure, psycopg.errors.LockNotAvailable)
"""Errors of a busy database, not a broken one: the statement is tried again, and never pauses the store."""


class _NotUsable(psycopg.Error):
    """A database whose toolproxy tables are of another format, or absent and not creatable."""


def safe_database_name(url: str) -> str:
    """`postgresql://user@host:port/dbname` for a libpq URL or `key=value` string: never the password (nor any
    other option). A string libpq cannot parse, or one whose parts would show a secret (an unencoded `@` or `/` in
    a password makes libpq read part of it as the host): `'a PostgreSQL database'`."""
    try:
        parts = pg_conninfo.conninfo_to_dict(url)
    except Exception:
        return 'a PostgreSQL database'
    user = parts.get('user')
    host = str(parts.get('host') or 'localhost')
    port = parts.get('port')
    name = parts.get('dbname') or ''
    shown = f'postgresql://{f"{user}@" if user else ""}{host}{f":{port}" if port else ""}/{name}'
    secrets = [str(parts.get('password') or '')]
    authority = url.partition('://')[2]
    if '@' in authority:
        secrets.append(authority[: authority.rfind('@')].partition(':')[2])
    if any(
        len(s) >= 3 and (s in shown or any(piece in shown for piece in s.split('@') if len(piece) >= 3))
        for s in secrets
    ):
        return 'a PostgreSQL database'
    return shown


class _Database:
    """One database as both stores use it: a connection per call (own or borrowed), the schema checked once per
    connection, faults turned into one warning and a pause of `retry_after` seconds."""

    def __init__(
        self,
        source: str | ConnectionPool[Any],
        *,
        owner: str,
        connect_timeout: float,
        statement_timeout: float,
        retry_after: float,
    ) -> None:
        for name, value in (
            ('connect_timeout', connect_timeout),
            ('statement_timeout', statement_timeout),
            ('retry_after', retry_after),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.001 <= value <= 86_400:
                raise ValueError(f'{owner} {name} must be a number of seconds from 0.001 to 86,400, got {value!r}')
        if isinstance(source, ConnectionPool):
            self.pool: ConnectionPool[Any] | None = source
            self.settings: set[str] = set()
            self.url = ''
            conninfo = source.conninfo
            self.name = safe_database_name(conninfo if isinstance(conninfo, str) else conninfo())
        elif isinstance(source, str) and source.strip():
            try:
                pg_conninfo.conninfo_to_dict(source)
            except psycopg.Error:  # libpq's message may quote the password: not shown
                raise ValueError(
                    f'{owner} needs a postgresql:// URL libpq can read (percent-encode special characters of the user '
                    f'name and password), got {redacted(source)}'
                ) from None
            self.pool = None
            self.url = source
            self.settings = set(pg_conninfo.conninfo_to_dict(source))
            self.name = safe_database_name(source)
        else:
            raise ValueError(
                f'{owner} needs a postgresql:// URL or a psycopg_pool.ConnectionPool, got {type(source).__name__}'
            )
        self.owner = owner
        self.connect_timeout = float(connect_timeout)
        self.statement_timeout = float(statement_timeout)
        self.retry_after = float(retry_after)
        self.lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = os.getpid()
        self._ready: set[int] = set()
        """`id`s of the connections whose schema was checked (own connection, or the pool's)."""
        self.down_until = 0.0
        self.writes_down_until = 0.0
        self.fault: str | None = None
        self.write_fault: str | None = None

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection inside a transaction (committed when the block ends, rolled back on an error), the schema
        checked, `statement_timeout` set for the transaction.

        Raises:
            psycopg.Error, OSError: the database failed (the caller falls back).
        """
        if self.pool is not None:
            with self.pool.connection(timeout=self.connect_timeout) as conn, conn.transaction():
                self._prepare(conn)
                yield conn
            return
        with self.lock:
            conn = self._own()
            try:
                with conn.transaction():
                    self._prepare(conn)
                    yield conn
            except (psycopg.OperationalError, psycopg.InterfaceError):
                self._drop()  # a connection that failed is not used again
                raise

    def _own(self) -> psycopg.Connection[Any]:
        if self._pid != os.getpid():  # a forked child never uses the parent's connection
            self._conn, self._pid = None, os.getpid()
            self._ready.clear()
        if self._conn is None or self._conn.closed:
            # Keepalives and tcp_user_timeout bound a connection that stops answering without closing (a failover
            # without a reset); libpq ignores them on a unix socket, and settings in the URL win.
            bound = max(1000, int(self.statement_timeout * 1000))
            extra: dict[str, Any] = {k: v for k, v in _KEEPALIVES.items() if k not in self.settings}
            if 'tcp_user_timeout' not in self.settings:
                extra['tcp_user_timeout'] = bound
            self._conn = psycopg.connect(
                self.url, connect_timeout=max(1, round(self.connect_timeout)), autocommit=True, **extra
            )
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._ready.discard(id(conn))
            with suppress(Exception):
                conn.close()

    def close(self) -> None:
        """Close the store's own connection (never a caller's pool)."""
        with self.lock:
            if self._pid == os.getpid():
                self._drop()
            self._conn = None

    def __del__(self) -> None:
        # Close the own connection when the store is collected (psycopg warns about one deleted while open); a
        # connection inherited across `os.fork` is the parent's and is left alone.
        conn = self.__dict__.get('_conn')
        if conn is not None and self.__dict__.get('_pid') == os.getpid():
            with suppress(Exception):
                conn.close()

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SELECT set_config('statement_timeout', %s, true)", (f'{int(self.statement_timeout * 1000)}',))
        if id(conn) in self._ready:
            return
        row = conn.execute('SELECT ' + ', '.join(f"to_regclass('{t}') IS NOT NULL" for t in _TABLES)).fetchone()
        if row is None or not all(row):
            with conn.transaction():  # a savepoint: a refusal (read-only, no privilege) leaves the outer one usable
                conn.execute('SELECT pg_advisory_xact_lock(%s)', (_LOCK_ID,))
                for statement in _SCHEMA:
                    conn.execute(statement)
                if conn.execute('SELECT count(*) FROM toolproxy_format').fetchone() == (0,):
                    conn.execute('INSERT INTO toolproxy_format (version) VALUES (%s)', (FORMAT_VERSION,))
        versions = [v for (v,) in conn.execute('SELECT version FROM toolproxy_format')]
        if versions != [FORMAT_VERSION]:
            raise _NotUsable(f'its toolproxy tables are of format {versions}, this version uses [{FORMAT_VERSION}]')
        self._ready.add(id(conn))

    def available(self) -> bool:
        """False while a fault's pause (`retry_after`) lasts."""
        return time.monotonic() >= self.down_until

    def failed(self, error: BaseException, what: str) -> None:
        """Note a fault: one warning per outage (until a call succeeds again), then a pause of `retry_after`."""
        reason = ' '.join(str(error).split()) or type(error).__name__
        self.down_until = time.monotonic() + self.retry_after
        if self.fault is None:
            logger.warning(
                '%s %s cannot be used (%s): %s; trying the database again in %g s',
                self.owner,
                self.name,
                reason[:500],
                what,
                self.retry_after,
            )
        self.fault = reason[:500]

    def recovered(self) -> None:
        if self.fault is not None:
            logger.info('%s %s is in use again', self.owner, self.name)
            self.fault = None

    def run(
        self,
        body: Callable[[psycopg.Connection[Any]], T],
        fallback: Callable[[], T],
        what: str,
        *,
        write: bool = False,
        busy: Callable[[], T] | None = None,
    ) -> T:
        """`body(conn)` in a transaction; on a fault (or during a fault's pause) `fallback()` instead. A write that
        the database refuses (read-only, no privilege) pauses writes only: reads go on. A deadlock or serialization
        failure is tried again twice, then answered by `busy()` (`fallback()` without it), with no pause and no
        warning. A table dropped meanwhile is looked for (and made) again at the next call."""
        now = time.monotonic()
        if now < self.down_until or (write and now < self.writes_down_until):
            return fallback()
        try:
            for attempt in range(3):
                try:
                    with self.transaction() as conn:
                        result = body(conn)
                    break
                except _BUSY:
                    if attempt == 2:
                        return fallback() if busy is None else busy()
                    time.sleep(0.01 * (attempt + 1))
        except (psycopg.errors.ReadOnlySqlTransaction, psycopg.errors.InsufficientPrivilege) as e:
            if not write:
                self.failed(e, what)
                return fallback()
            self.writes_down_until = time.monotonic() + self.retry_after
            if self.write_fault is None:
                logger.warning(
                    '%s %s refuses writes (%s): %s; trying again in %g s',
                    self.owner,
                    self.name,
                    ' '.join(str(e).split())[:500],
                    what,
                    self.retry_after,
                )
            self.write_fault = ' '.join(str(e).split())[:500] or type(e).__name__
            return fallback()
        except Exception as e:  # psycopg.Error, OSError, a pool's timeout: the database cannot be used now
            if isinstance(e, psycopg.errors.UndefinedTable):
                self._ready.clear()  # dropped while in use: checked, and made, again
            self.failed(e, what)
            return fallback()
        self.recovered()
        if write:
            self.write_fault = None
        return result


def _source_repr(db: _Database) -> str:
    return 'caller pool' if db.pool is not None else 'own connection'


class PostgresEmbeddingStore:
    """An `EmbeddingStore` in a PostgreSQL database, shared by every process on every machine that uses it.

    ```python
    from pydantic_ai_toolproxy import ToolProxyConfig
    from pydantic_ai_toolproxy.embedding_store import PostgresEmbeddingStore

    store = PostgresEmbeddingStore('postgresql://toolproxy:secret@db.internal/agents')  # nothing connects yet
    assert 'secret' not in repr(store)
    config = ToolProxyConfig(embedder='openai:text-embedding-3-small', embedding_cache=store)
    ```

    Rows are `(model text, hash bytea, vector bytea)`, keyed by `(model, hash)`; a tool's text is never stored.
    Reads and writes are batched (`READ_CHUNK` hashes per `SELECT`, `WRITE_CHUNK` rows per `INSERT ... SELECT
    FROM unnest(...) ON CONFLICT ... DO UPDATE`, rows in hash order so concurrent writers never deadlock), so 100,000
    vectors take a few round trips; hashes and vectors travel as binary parameters and results (no hex text). `claim_many`/`release_many` let the processes of a fleet embed each text once.

    Args:
        source: A `postgresql://` (or `postgres://`) URL, or a caller-owned `psycopg_pool.ConnectionPool` (borrowed
            per call, never closed by the store).
        connect_timeout: Seconds to wait for a connection (> 0).
        statement_timeout: Seconds one statement may run (> 0; `SET LOCAL statement_timeout`).
        retry_after: Seconds between a fault and the next try of the database (> 0).

    Raises:
        ValueError: at construction, an invalid URL, a source of another type, or a non-positive timeout.
    """

    shared = True
    """Every process using the database sees these vectors."""

    def __init__(
        self,
        source: str | ConnectionPool[Any],
        *,
        connect_timeout: float = 5.0,
        statement_timeout: float = 60.0,
        retry_after: float = 30.0,
    ) -> None:
        self._db = _Database(
            source,
            owner='PostgresEmbeddingStore',
            connect_timeout=connect_timeout,
            statement_timeout=statement_timeout,
            retry_after=retry_after,
        )
        self._memory = MemoryEmbeddingStore()
        """What could not be written (a fault, a read-only database), served from here for this process's life."""
        self._claimer = f'{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}'

    def __repr__(self) -> str:
        state = f', fault: {self._db.fault}' if self._db.fault else ''
        return f'PostgresEmbeddingStore({self._db.name!r}, {_source_repr(self._db)}{state})'

    @property
    def database(self) -> str:
        """The database as `postgresql://user@host:port/dbname` (never the password)."""
        return self._db.name

    @property
    def fault(self) -> str | None:
        """Why the database is not in use now (the last fault, until a call succeeds again), or None."""
        return self._db.fault

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored vectors of `hashes` under `model`, from the database and, for what it could not take, this
        process's memory. A fault: memory only (one warning).

        Raises:
            ValueError: a `model` that is not a non-empty str, or a hash that is not 1-64 bytes.
        """
        check_model(model)
        check_hashes(hashes)
        if not hashes:
            return {}
        unique = list(dict.fromkeys(hashes))

        def read(conn: psycopg.Connection[Any]) -> dict[bytes, bytes]:
            found: dict[bytes, bytes] = {}
            with conn.cursor(binary=True) as cur:
                if len(unique) >= SCAN_AT:  # a restart: most of the model's rows, read in one sequential pass
                    cur.execute('SELECT count(*) FROM toolproxy_vectors WHERE model = %s', (model,))
                    row = cur.fetchone()
                    if row is not None and 2 * len(unique) >= row[0]:
                        cur.execute('SELECT hash, vector FROM toolproxy_vectors WHERE model = %s', (model,))
                        found = dict(cur.fetchall())
                        if len(found) > len(unique) or not found.keys() <= set(unique):
                            wanted = set(unique)
                            found = {h: v for h, v in found.items() if h in wanted}
                        return found
                for start in range(0, len(unique), READ_CHUNK):
                    cur.execute(
                        'SELECT hash, vector FROM toolproxy_vectors WHERE model = %s AND hash = ANY(%b)',
                        (model, unique[start : start + READ_CHUNK]),
                    )
                    found.update(cur.fetchall())
            return found

        nothing: Callable[[], dict[bytes, bytes]] = dict
        found = self._db.run(read, nothing, 'tool vectors are read from memory and embedded meanwhile')
        if self._memory.count(model) and len(found) < len(unique):
            found.update(self._memory.get_many(model, [h for h in unique if h not in found]))
        return found

    def put_many(self, model: str, items: Mapping[bytes, bytes]) -> None:
        """Store `{hash: vector}` under `model` (replacing a different stored vector). A fault or a read-only
        database: the vectors stay in this process's memory (one warning).

        Raises:
            ValueError: a bad `model` or hash, or a vector that is not non-empty bytes of a multiple of 4.
        """
        check_model(model)
        check_items(items)
        if not items:
            return
        rows = sorted(items.items())

        def write(conn: psycopg.Connection[Any]) -> bool:
            with conn.cursor() as cur:
                for start in range(0, len(rows), WRITE_CHUNK):
                    chunk = rows[start : start + WRITE_CHUNK]
                    cur.execute(_UPSERT, (model, [h for h, _ in chunk], [v for _, v in chunk]))
            return True

        if not self._db.run(write, lambda: False, 'tool vectors stay in memory', write=True):
            self._memory.put_many(model, items)

    def claim_many(self, model: str, hashes: Sequence[bytes], *, limit: int, seconds: float) -> list[bytes]:
        """Claim, for `seconds`, at most `limit` of `hashes` (in order) without a vector under `model` and without a
        live claim of another process (one statement: concurrent claimers never both win a text). A fault: claims
        in this process's memory only.

        Raises:
            ValueError: a bad `model`, hash, `limit` or `seconds`.
        """
        check_model(model)
        check_hashes(hashes)
        check_claim(limit, seconds)
        unique = list(dict.fromkeys(hashes))
        if not unique:
            return []

        def claim(conn: psycopg.Connection[Any]) -> list[bytes]:
            params = {'model': model, 'owner': self._claimer, 'seconds': float(seconds), 'hashes': unique}
            with conn.cursor(binary=True) as cur:
                cur.execute(_CLAIM, params | {'limit': limit})
                claimed = [h for (h,) in cur.fetchall()]
                if not claimed:
                    return claimed
                cur.execute(_UNCLAIM_STORED, {'model': model, 'owner': self._claimer, 'hashes': claimed})
                stored = {h for (h,) in cur.fetchall()}
            return [h for h in unique if h in set(claimed) - stored]  # in the order asked

        return self._db.run(
            claim,
            lambda: self._memory.claim_many(model, unique, limit=limit, seconds=seconds),
            'claims stay in this process',
            write=True,
            busy=list,  # other claimers hold the rows: nothing claimed now, the caller looks again
        )

    def release_many(self, model: str, hashes: Sequence[bytes]) -> None:
        """Drop this process's claims of `hashes` under `model` (a fault: they expire by themselves)."""
        check_model(model)
        check_hashes(hashes)
        self._memory.release_many(model, hashes)
        if not hashes:
            return

        def release(conn: psycopg.Connection[Any]) -> None:
            conn.execute(
                'DELETE FROM toolproxy_claims WHERE model = %s AND owner = %s AND hash = ANY(%b)',
                (model, self._claimer, list(hashes)),
            )

        self._db.run(release, lambda: None, 'claims expire by themselves', write=True)

    def count(self, model: str | None = None) -> int | None:
        """Vectors in the database (under `model`, or all), None while it cannot be used."""

        def count(conn: psycopg.Connection[Any]) -> int | None:
            if model is None:
                row = conn.execute('SELECT count(*) FROM toolproxy_vectors').fetchone()
            else:
                row = conn.execute('SELECT count(*) FROM toolproxy_vectors WHERE model = %s', (model,)).fetchone()
            return None if row is None else int(row[0])

        return self._db.run(count, lambda: None, 'tool vectors stay in memory')

    def describe(self, model: str) -> dict[str, Any]:
        """What `toolproxy inspect` shows: `kind` `postgres`, `database` (no password), `vectors` under `model`
        (None while unusable), `fault`."""
        vectors = self.count(model)
        return {'kind': 'postgres', 'database': self._db.name, 'vectors': vectors, 'fault': self._db.fault}

    def close(self) -> None:
        """Close the store's own connection (idempotent; a later call reconnects). A caller's pool stays open."""
        self._db.close()

    def __enter__(self) -> PostgresEmbeddingStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PostgresListingStore:
    """A `ListingStore` (MCP listings) in a PostgreSQL database: a fleet lists each server once.

    Same sources, timeouts and fault behaviour as `PostgresEmbeddingStore` (a fault: `get` answers None, `put`
    keeps the entry in this process; one warning, a retry `retry_after` seconds later). Entries hold what the
    server listed and the key (environment and header values only hashed into it).

    Raises:
        ValueError: at construction, an invalid URL, a source of another type, or a non-positive timeout.
    """

    def __init__(
        self,
        source: str | ConnectionPool[Any],
        *,
        connect_timeout: float = 5.0,
        statement_timeout: float = 30.0,
        retry_after: float = 30.0,
    ) -> None:
        self._db = _Database(
            source,
            owner='PostgresListingStore',
            connect_timeout=connect_timeout,
            statement_timeout=statement_timeout,
            retry_after=retry_after,
        )
        self._memory: dict[str, ServerListing] = {}

    def __repr__(self) -> str:
        return f'PostgresListingStore({self._db.name!r}, {_source_repr(self._db)})'

    @property
    def fault(self) -> str | None:
        """Why the database is not in use now, or None."""
        return self._db.fault

    def get(self, key: str) -> ServerListing | None:
        """The entry stored under `key` (None when absent, unreadable, or the database is down)."""

        def read(conn: psycopg.Connection[Any]) -> ServerListing | None:
            row = conn.execute('SELECT entry FROM toolproxy_mcp_listings WHERE key = %s', (key,)).fetchone()
            if row is None:
                return None
            try:
                return ServerListing.from_json(row[0])
            except Exception:  # an entry that is no listing (written by hand, another version): not cached
                return None

        found = self._db.run(read, lambda: None, 'MCP servers are listed by starting them')
        return found if found is not None else self._memory.get(key)

    def put(self, key: str, listing: ServerListing) -> None:
        """Store `listing` under `key` (replacing the entry there)."""

        def write(conn: psycopg.Connection[Any]) -> bool:
            conn.execute(
                'INSERT INTO toolproxy_mcp_listings (key, entry) VALUES (%s, %s) '
                'ON CONFLICT (key) DO UPDATE SET entry = EXCLUDED.entry, stored_at = now()',
                (key, listing.to_json()),
            )
            return True

        if not self._db.run(write, lambda: False, 'listings stay in this process', write=True):
            self._memory[key] = listing

    def close(self) -> None:
        """Close the store's own connection (a caller's pool stays open)."""
        self._db.close()
