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

import os
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ._checks import check_claim, check_hashes, check_items, check_model
from .listings import ServerListing
from .memory import MemoryEmbeddingStore
from .postgres_db import FORMAT_VERSION, Database, safe_database_name, source_repr

__all__ = ('FORMAT_VERSION', 'PostgresEmbeddingStore', 'PostgresListingStore', 'safe_database_name')

READ_CHUNK = 50_000
"""Hashes asked for per `SELECT ... WHERE hash = ANY(...)` (100,000 vectors load in two round trips)."""
SCAN_AT = 2_000
"""From this many hashes on, a lookup that asks for at least half of the model's rows reads all of them in one
pass (no index probe per hash) and drops the rows nobody asked for."""
WRITE_CHUNK = 10_000
"""Rows per `INSERT ... SELECT FROM unnest(...)` (about 15 MB of 384-dimension vectors)."""

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
        self._db = Database(
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
        return f'PostgresEmbeddingStore({self._db.name!r}, {source_repr(self._db)}{state})'

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
        self._db = Database(
            source,
            owner='PostgresListingStore',
            connect_timeout=connect_timeout,
            statement_timeout=statement_timeout,
            retry_after=retry_after,
        )
        self._memory: dict[str, ServerListing] = {}

    def __repr__(self) -> str:
        return f'PostgresListingStore({self._db.name!r}, {source_repr(self._db)})'

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
