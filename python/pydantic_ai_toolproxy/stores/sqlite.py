"""`SQLiteEmbeddingStore`: the embedded default, one SQLite file shared by every process of the machine.

The file holds the model names, `(model, hash, vector)` rows and the claims of texts being embedded (`claims`:
`(model, hash, owner, expires)`), never a tool's text.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ._checks import check_claim, check_hashes, check_items, check_model
from .memory import MemoryEmbeddingStore

__all__ = ('APPLICATION_ID', 'FORMAT_VERSION', 'PAGE_SIZE', 'SCAN_AT', 'SQLiteEmbeddingStore')

logger = logging.getLogger('pydantic_ai_toolproxy')

FORMAT_VERSION = 1
"""The cache file's format (SQLite `user_version`); a file of another format is left alone and not used."""
APPLICATION_ID = 0x54505843
"""SQLite `application_id` of a cache file ('TPXC'): a SQLite file of another application is not used."""
PAGE_SIZE = 32_768
"""SQLite page size of a new cache file, in bytes: 21 vectors of 384 dimensions or 5 of 1,536 fill a page (about 94%
of it, against 75-80% with SQLite's default 4,096), which makes the file smaller and quicker to load (docs/embedding-cache.md)."""
SCAN_AT = 2_000
"""From this many hashes on, a lookup that asks for at least half the file's rows reads the table in file order
(one sequential pass instead of as many index lookups; how much faster: docs/embedding-cache.md)."""
_CHUNK = 500
"""Hashes looked up per `IN (...)` query (under SQLite's oldest limit of 999 bound parameters)."""

_SCHEMA = (
    'CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)',
    'CREATE TABLE IF NOT EXISTS vectors ('
    'model INTEGER NOT NULL REFERENCES models (id), hash BLOB NOT NULL, vector BLOB NOT NULL, '
    'PRIMARY KEY (model, hash))',
)
_CLAIMS = (
    'CREATE TABLE IF NOT EXISTS claims ('
    'model INTEGER NOT NULL, hash BLOB NOT NULL, owner TEXT NOT NULL, expires REAL NOT NULL, PRIMARY KEY (model, hash))'
)
"""Claims of texts being embedded (`claim_many`), created by any process that opens a file without it (format 1
files written before claims existed gain the table; older readers ignore it)."""


class SQLiteEmbeddingStore:
    """An `EmbeddingStore` in one SQLite file, shared by every process that opens the same path.

    The file holds one table of `(model, hash, vector)` rows (and the model names); no tool text is ever written.
    It is opened on first use (not at construction), in WAL mode with `synchronous=NORMAL`, so readers never
    wait for a writer and writers wait for each other up to `timeout` seconds; each `put_many` is one
    transaction. The directory is created when missing. The object is thread-safe, and after `os.fork` the child
    opens its own connection.

    Faults never fail a run: when the file cannot be used (not a SQLite database or damaged, locked past
    `timeout`, read-only file or directory, a SQLite file of another application, a cache of another
    `FORMAT_VERSION`), the store logs one warning on the `pydantic_ai_toolproxy` logger naming the path and the
    reason, and from then on keeps vectors in memory (a `MemoryEmbeddingStore`) for the rest of its life. The
    file itself is never deleted or rewritten by a fallback; fix or remove it and the next process uses it again.

    ```python
    import tempfile
    from pathlib import Path

    from pydantic_ai_toolproxy import SQLiteEmbeddingStore

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'embeddings.sqlite3'
        with SQLiteEmbeddingStore(path) as store:
            store.put_many('test:model:2', {b'h' * 16: bytes(8)})
        with SQLiteEmbeddingStore(path) as again:  # another process would see the same
            assert again.get_many('test:model:2', [b'h' * 16]) == {b'h' * 16: bytes(8)}
            assert not again.fell_back
    ```

    Args:
        path: The cache file (`str` or path-like; a leading `~` or `~user` is expanded, as everywhere a path is
            taken); `default_embedding_cache_path()` is the documented default.
        timeout: Seconds to wait for another process's lock (SQLite's busy timeout) before falling back, > 0.

    Raises:
        ValueError: at construction, an empty path or a `timeout` that is not a positive number.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        raw = os.fspath(path) if isinstance(path, str | os.PathLike) else None
        if not isinstance(raw, str) or not raw:
            raise ValueError(f'SQLiteEmbeddingStore path must be a non-empty str or path, got {path!r}')
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(f'SQLiteEmbeddingStore timeout must be a positive number of seconds, got {timeout!r}')
        self.path = Path(raw).expanduser()
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._models: dict[str, int] = {}
        self._fallback: MemoryEmbeddingStore | None = None
        self._fault: str | None = None
        self._inherited: list[sqlite3.Connection] = []
        self._owner = f'{os.getpid()}:{uuid.uuid4().hex}'
        self._busy_claims = MemoryEmbeddingStore()
        """Claims taken while the file was busy past `timeout` (this process embeds them; the store stays in use)."""
        """This object's name on its claims (`claim_many`): another process's store is another owner."""

    shared = True
    """Every process that opens the same file sees these vectors."""

    def __repr__(self) -> str:
        state = f', fell back: {self._fault}' if self._fault else ''
        return f'SQLiteEmbeddingStore({str(self.path)!r}{state})'

    @property
    def fell_back(self) -> bool:
        """True once a fault made this store keep vectors in memory (see `fault`)."""
        return self._fallback is not None

    @property
    def fault(self) -> str | None:
        """Why the store fell back to memory (`'database is locked'`, ...), or None while the file is in use."""
        return self._fault

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored vectors of `hashes` under `model` (hashes without one are omitted).

        Reads see every transaction committed before they start, by any process. After a fault, the answer comes
        from memory (the vectors this object stored since).

        Raises:
            ValueError: a `model` that is not a non-empty str, or a hash that is not 1-64 bytes (caller errors;
                file faults never raise).
        """
        check_model(model)
        check_hashes(hashes)
        if not hashes:
            return {}
        with self._lock:
            if self._fallback is None:
                try:
                    return self._read(model, hashes)
                except (sqlite3.Error, OSError) as error:
                    self._fall_back(error)
            assert self._fallback is not None
            return self._fallback.get_many(model, hashes)

    def put_many(self, model: str, items: Mapping[bytes, bytes]) -> None:
        """Store `{hash: vector}` under `model` in one transaction (all or nothing), replacing existing vectors.

        Raises:
            ValueError: a bad `model` or hash (see `get_many`), or a vector that is not a non-empty `bytes` whose
                length is a multiple of 4 (caller errors; file faults never raise).
        """
        check_model(model)
        check_items(items)
        if not items:
            return
        with self._lock:
            if self._fallback is None:
                try:
                    self._write(model, items)
                    return
                except (sqlite3.Error, OSError) as error:
                    self._fall_back(error)
            assert self._fallback is not None
            self._fallback.put_many(model, items)

    def count(self, model: str | None = None) -> int:
        """The number of vectors stored (under `model`, or over all models); after a fault, the number in memory."""
        with self._lock:
            if self._fallback is None:
                try:
                    conn = self._connection()
                    if model is None:
                        row = conn.execute('SELECT count(*) FROM vectors').fetchone()
                    else:
                        row = conn.execute(
                            'SELECT count(*) FROM vectors JOIN models ON models.id = vectors.model WHERE models.name = ?',
                            (model,),
                        ).fetchone()
                    return int(row[0])
                except (sqlite3.Error, OSError) as error:
                    self._fall_back(error)
            assert self._fallback is not None
            return self._fallback.count(model)

    def claim_many(self, model: str, hashes: Sequence[bytes], *, limit: int, seconds: float) -> list[bytes]:
        """Claim, for `seconds`, at most `limit` of `hashes` (in order) without a vector under `model` and without a
        live claim of another owner, in one transaction (`ClaimingStore`). A file busy past `timeout`: claimed in
        this process only (the work goes on, the store stays in use); after a fault: claims in memory.

        Raises:
            ValueError: a bad `model`, hash, `limit` or `seconds` (file faults never raise).
        """
        check_model(model)
        check_hashes(hashes)
        check_claim(limit, seconds)
        if not hashes:
            return []
        with self._lock:
            if self._fallback is None:
                try:
                    return self._claim(model, list(dict.fromkeys(hashes)), limit, seconds)
                except sqlite3.OperationalError as error:
                    if _busy(error):  # other processes hold the file past `timeout`: claim in this process
                        return self._busy_claims.claim_many(model, hashes, limit=limit, seconds=seconds)
                    self._fall_back(error)
                except (sqlite3.Error, OSError) as error:
                    self._fall_back(error)
            assert self._fallback is not None
            return self._fallback.claim_many(model, hashes, limit=limit, seconds=seconds)

    def release_many(self, model: str, hashes: Sequence[bytes]) -> None:
        """Drop this object's claims of `hashes` under `model` (a fault: nothing to drop, the claims expire)."""
        check_model(model)
        check_hashes(hashes)
        if not hashes:
            return
        with self._lock:
            self._busy_claims.release_many(model, hashes)
            if self._fallback is not None:
                self._fallback.release_many(model, hashes)
                return
            try:
                conn = self._connection()
                with _transaction(conn):
                    model_id = self._model_id(conn, model, create=False)
                    if model_id is None:
                        return
                    conn.executemany(
                        'DELETE FROM claims WHERE model = ? AND hash = ? AND owner = ?',
                        ((model_id, h, self._owner) for h in hashes),
                    )
            except sqlite3.OperationalError as error:
                if not _busy(error):  # a busy file: the claims expire by themselves
                    self._fall_back(error)
            except (sqlite3.Error, OSError) as error:
                self._fall_back(error)

    def describe(self, model: str) -> dict[str, Any]:
        """What `toolproxy inspect` shows: `kind` `file`, `path`, `vectors` under `model` (None after a fault),
        `fell_back`, `fault`."""
        count = self.count(model)
        return {
            'kind': 'file',
            'path': str(self.path),
            'vectors': None if self.fell_back else count,
            'fell_back': self.fell_back,
            'fault': self.fault,
        }

    def close(self) -> None:
        """Close the file (idempotent). A later call opens it again."""
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                self._models.clear()
                with suppress(sqlite3.Error):  # closing a connection that failed mid-way
                    conn.close()

    def __del__(self) -> None:
        # Close our own connection when the store is collected (CPython 3.13 warns about an unclosed one). A
        # connection inherited across `os.fork` is never closed from the child: closing may checkpoint and delete
        # the parent's write-ahead log.
        conn = self.__dict__.get('_conn')
        if conn is not None and self.__dict__.get('_pid') == os.getpid():
            with suppress(Exception):
                conn.close()

    def __enter__(self) -> SQLiteEmbeddingStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # a forked child: never use the parent's connection (SQLite forbids it)
            if self._conn is not None:
                self._inherited.append(self._conn)  # kept referenced, never closed from the child
            self._conn, self._pid = None, os.getpid()
            self._models.clear()
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(self.path.parent, os.W_OK):  # WAL keeps -wal and -shm files beside the cache
            raise PermissionError(f'the directory {self.path.parent} is read-only')
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise PermissionError('the file is read-only')
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f'PRAGMA page_size={PAGE_SIZE}')  # takes effect on a new file only
            with _read_transaction(conn):  # before anything writes: a file that is not ours stays untouched
                ready = _is_cache(conn)
            if conn.execute('PRAGMA journal_mode=WAL').fetchone()[0].lower() != 'wal':
                raise sqlite3.OperationalError('cannot use WAL mode')
            conn.execute('PRAGMA synchronous=NORMAL')
            if ready and conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'claims'").fetchone()[0] == 0:
                with _transaction(conn):  # a format-1 file written before claims: add their table
                    conn.execute(_CLAIMS)
            if not ready:
                with _transaction(conn):  # another process may have created it meanwhile: look again, locked
                    if not _is_cache(conn):
                        conn.execute(f'PRAGMA application_id={APPLICATION_ID}')
                        conn.execute(f'PRAGMA user_version={FORMAT_VERSION}')
                        for statement in _SCHEMA:
                            conn.execute(statement)
                        conn.execute(_CLAIMS)
        except BaseException:
            conn.close()
            raise
        return conn

    def _model_id(self, conn: sqlite3.Connection, model: str, *, create: bool) -> int | None:
        known = self._models.get(model)
        if known is not None:
            return known
        row = conn.execute('SELECT id FROM models WHERE name = ?', (model,)).fetchone()
        if row is None:
            if not create:
                return None
            conn.execute('INSERT OR IGNORE INTO models (name) VALUES (?)', (model,))
            row = conn.execute('SELECT id FROM models WHERE name = ?', (model,)).fetchone()
        self._models[model] = int(row[0])
        return self._models[model]

    def _read(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        conn = self._connection()
        found: dict[bytes, bytes] = {}
        with _read_transaction(conn):  # one snapshot for every chunk
            model_id = self._model_id(conn, model, create=False)
            if model_id is None:
                return found
            wanted = set(hashes)
            if len(wanted) >= SCAN_AT and self._model_dominates(conn, model_id, len(wanted)):
                rows = conn.execute('SELECT hash, vector FROM vectors NOT INDEXED WHERE model = ?', (model_id,))
                found = dict(rows)  # every row of the model at C speed; the rows nobody asked for go below
                if not found.keys() <= wanted:
                    found = {h: v for h, v in found.items() if h in wanted}
                return found
            unique = list(dict.fromkeys(hashes))
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ','.join('?' * len(chunk))
                rows = conn.execute(
                    f'SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})', (model_id, *chunk)
                )
                found.update(rows)
        return found

    @staticmethod
    def _model_dominates(conn: sqlite3.Connection, model_id: int, wanted: int) -> bool:
        """Whether reading the whole table in file order beats looking `wanted` hashes up one by one: when they are
        at least half the rows (other models' rows and vectors nobody asks for are read and skipped)."""
        rows = conn.execute('SELECT count(*) FROM vectors').fetchone()[0]
        return bool(wanted * 2 >= rows)

    def _write(self, model: str, items: Mapping[bytes, bytes]) -> None:
        conn = self._connection()
        try:
            with _transaction(conn):
                model_id = self._model_id(conn, model, create=True)
                conn.executemany(
                    'INSERT OR REPLACE INTO vectors (model, hash, vector) VALUES (?, ?, ?)',
                    ((model_id, h, v) for h, v in items.items()),
                )
        except BaseException:
            self._models.pop(model, None)  # a model row created in the rolled-back transaction is gone
            raise

    def _claim(self, model: str, hashes: list[bytes], limit: int, seconds: float) -> list[bytes]:
        conn = self._connection()
        now = time.time()
        claimed: list[bytes] = []
        with _transaction(conn):  # BEGIN IMMEDIATE: one claimer at a time, so no text is claimed twice
            model_id = self._model_id(conn, model, create=True)
            taken: set[bytes] = set()
            for start in range(0, len(hashes), _CHUNK):
                chunk = hashes[start : start + _CHUNK]
                marks = ','.join('?' * len(chunk))
                taken.update(
                    h
                    for (h,) in conn.execute(
                        f'SELECT hash FROM vectors WHERE model = ? AND hash IN ({marks})', (model_id, *chunk)
                    )
                )
                taken.update(
                    h
                    for (h,) in conn.execute(
                        f'SELECT hash FROM claims WHERE model = ? AND hash IN ({marks}) AND expires > ? AND owner != ?',
                        (model_id, *chunk, now, self._owner),
                    )
                )
            for h in hashes:
                if len(claimed) >= limit:
                    break
                if h not in taken:
                    claimed.append(h)
            conn.executemany(
                'INSERT OR REPLACE INTO claims (model, hash, owner, expires) VALUES (?, ?, ?, ?)',
                ((model_id, h, self._owner, now + seconds) for h in claimed),
            )
        return claimed

    def _fall_back(self, error: BaseException) -> None:
        reason = str(error) or type(error).__name__
        self._fault = reason
        self._fallback = MemoryEmbeddingStore()
        logger.warning(
            'embedding cache %s cannot be used (%s): tool vectors are kept in memory for this process',
            self.path,
            reason,
        )
        self.close()


class _NotUsable(sqlite3.DatabaseError):
    """A readable SQLite file that is not a cache this version may use (another application or format)."""


def _is_cache(conn: sqlite3.Connection) -> bool:
    """True for a cache of this format, False for an empty database (to be created).

    Raises:
        _NotUsable: a SQLite file of another application, or a cache of another `FORMAT_VERSION`.
    """
    application_id = conn.execute('PRAGMA application_id').fetchone()[0]
    version = conn.execute('PRAGMA user_version').fetchone()[0]
    tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    if application_id == 0 and version == 0 and tables == 0:
        return False
    if application_id != APPLICATION_ID:
        raise _NotUsable('a SQLite file of another application, not a toolproxy embedding cache')
    if version != FORMAT_VERSION:
        raise _NotUsable(f'cache format {version}, this version reads format {FORMAT_VERSION}')
    return True


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute('BEGIN IMMEDIATE')
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute('ROLLBACK')
        raise
    conn.execute('COMMIT')


@contextmanager
def _read_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute('BEGIN')
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute('COMMIT')


def _busy(error: sqlite3.OperationalError) -> bool:
    """Whether `error` is another process holding the file past the busy timeout (not a broken file)."""
    text = str(error).lower()
    return 'locked' in text or 'busy' in text
