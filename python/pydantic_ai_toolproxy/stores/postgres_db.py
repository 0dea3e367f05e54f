"""The PostgreSQL database both PostgreSQL stores use (`postgres.py`): one connection per call, the caller's pool's
or the store's own (reopened after a fault or an `os.fork`, TCP keepalives on), the tables created when absent under
an advisory lock and their format checked once per connection, every statement under `statement_timeout`, and a
fault turned into one warning (the database named without its password: `safe_database_name`) and a pause of
`retry_after` seconds, during which the store serves its fallback.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from psycopg import conninfo as pg_conninfo
from psycopg_pool import ConnectionPool

from .._urls import redacted

__all__ = ('FORMAT_VERSION', 'Database', 'safe_database_name', 'source_repr')

logger = logging.getLogger('pydantic_ai_toolproxy')

T = TypeVar('T')

FORMAT_VERSION = 1
"""The tables' format (the one row of `toolproxy_format`); a database of another format is left alone."""

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


class Database:
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


def source_repr(db: Database) -> str:
    return 'caller pool' if db.pool is not None else 'own connection'
