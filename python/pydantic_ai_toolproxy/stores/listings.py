"""MCP listing stores: where each server's last `tools/list` answer is kept (`ServerListing`).

`ListingStore` is the protocol (`get`, `put`); `MemoryListingStore`, `SQLiteListingStore` (the default file) and
`PostgresListingStore` (`stores.postgres`, a fleet's shared database) implement it; `stores.opening.
open_listing_store` turns a setting into one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = (
    'DEFAULT_MAX_AGE',
    'MAX_TTL_MS',
    'ListingStore',
    'MemoryListingStore',
    'SQLiteListingStore',
    'ServerListing',
)

DEFAULT_MAX_AGE = 86_400.0
"""Seconds an entry stays fresh when its server announced no `ttlMs` above zero."""

MAX_TTL_MS = 30 * 86_400_000
"""The longest `ttlMs` hint an entry keeps, in milliseconds (30 days): a larger one (MCP allows any integer, the
SDK's own `CacheHint` sends `10**400`) is cut to it when the entry is made or read."""


def clamped_ttl(value: object) -> int | None:
    """A server's `ttlMs` hint as an entry keeps it: None for no hint (absent, not an int, a bool, zero or less),
    else at most `MAX_TTL_MS` milliseconds."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return min(value, MAX_TTL_MS)


@dataclass(frozen=True)
class ServerListing:
    """What a server said when it was last started.

    Attributes:
        tools: Each tool as the server listed it: MCP `Tool` JSON objects (camelCase keys, as on the wire).
        server_name: `serverInfo.name`, None when the server sent none.
        server_version: `serverInfo.version`.
        server_title: `serverInfo.title`.
        instructions: The server's `instructions` from `initialize`.
        fetched_at: When it was listed, seconds since the epoch.
        ttl_ms: The server's `ttlMs` cache hint on the listing, milliseconds (None: no hint; cut to `MAX_TTL_MS`).
    """

    tools: tuple[dict[str, Any], ...]
    server_name: str | None = None
    server_version: str | None = None
    server_title: str | None = None
    instructions: str | None = None
    fetched_at: float = 0.0
    ttl_ms: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, 'ttl_ms', clamped_ttl(self.ttl_ms))  # any hint fits: 10**400 ms is 30 days

    def fresh(self, max_age: float = DEFAULT_MAX_AGE, now: float | None = None) -> bool:
        """Whether the entry may still be served: younger than the server's `ttlMs` when above zero (at most
        `MAX_TTL_MS`), else than `max_age` seconds. Never raises: an entry whose time cannot be compared is not
        fresh."""
        try:
            age = (time.time() if now is None else now) - float(self.fetched_at)
            ttl = clamped_ttl(self.ttl_ms)
            limit = ttl / 1000 if ttl else float(max_age)
            return 0 <= age <= limit
        except (ArithmeticError, TypeError, ValueError):
            return False

    def mcp_tools(self) -> list[Any]:
        """The tools as the MCP SDK's `mcp.types.Tool` objects, validated once per entry (later calls return the
        same list).

        Raises:
            ValueError: a tool the MCP SDK rejects (pydantic's `ValidationError`: no `inputSchema`, no name, ...).
        """
        known: list[Any] | None = self.__dict__.get('_mcp_tools')
        if known is None:
            from mcp.types import Tool

            known = [Tool.model_validate(tool) for tool in self.tools]
            object.__setattr__(self, '_mcp_tools', known)
        return known

    def with_mcp_tools(self, tools: list[Any]) -> ServerListing:
        """This entry, with `tools` (the MCP `Tool` objects it was dumped from) as its `mcp_tools`."""
        object.__setattr__(self, '_mcp_tools', list(tools))
        return self

    def to_json(self) -> str:
        """The entry as one JSON text (what the stores keep)."""
        return json.dumps(asdict(self), ensure_ascii=False, separators=(',', ':'), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> ServerListing:
        """The entry `to_json` wrote.

        Raises:
            ValueError: not such a JSON text.
        """
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get('tools'), list):
            raise ValueError('not a listing entry')
        if not all(isinstance(tool, dict) for tool in data['tools']):
            raise ValueError('not a listing entry: a tool is not an object')
        return cls(
            tools=tuple(data['tools']),
            server_name=_text_or_none(data.get('server_name')),
            server_version=_text_or_none(data.get('server_version')),
            server_title=_text_or_none(data.get('server_title')),
            instructions=_text_or_none(data.get('instructions')),
            fetched_at=float(data.get('fetched_at') or 0.0),
            ttl_ms=clamped_ttl(data.get('ttl_ms')),
        )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


@runtime_checkable
class ListingStore(Protocol):
    """Where listings are kept: implement these for a store of your own (keys are at most 200 characters).

    Both methods may raise; the proxy logs the first failure of a store and goes on as if it held nothing.
    """

    def get(self, key: str) -> ServerListing | None:
        """The entry stored under `key`, or None."""
        ...

    def put(self, key: str, listing: ServerListing) -> None:
        """Store `listing` under `key`, replacing what was there."""
        ...


class MemoryListingStore:
    """A `ListingStore` in this process's memory (lost at exit; shared by the capabilities given it)."""

    def __init__(self) -> None:
        self._entries: dict[str, ServerListing] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f'MemoryListingStore({len(self._entries)} entries)'

    def get(self, key: str) -> ServerListing | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, listing: ServerListing) -> None:
        with self._lock:
            self._entries[key] = listing


class SQLiteListingStore:
    """A `ListingStore` in an SQLite file (made with its folder when absent; `~` expanded), safe for several
    processes at once (each `put` is one transaction; readers never block writers for long: WAL).

    Raises:
        sqlite3.Error: from `get`/`put`, for a file that is not such a store or cannot be opened.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        self.path = Path(os.path.expanduser(os.fspath(path)))
        self._timeout = timeout

    def __repr__(self) -> str:
        return f'SQLiteListingStore({os.fspath(self.path)!r})'

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for one call, closed after it (a store is read once per server and written at each live
        start: no connection is kept open between them)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        try:
            conn.execute('PRAGMA journal_mode=WAL')
            conn.execute('CREATE TABLE IF NOT EXISTS mcp_listings (key TEXT PRIMARY KEY, entry TEXT NOT NULL)')
            yield conn
        finally:
            conn.close()

    def get(self, key: str) -> ServerListing | None:
        with self._connection() as conn:
            row = conn.execute('SELECT entry FROM mcp_listings WHERE key = ?', (key,)).fetchone()
        return None if row is None else ServerListing.from_json(row[0])

    def put(self, key: str, listing: ServerListing) -> None:
        with self._connection() as conn:
            conn.execute(
                'INSERT INTO mcp_listings (key, entry) VALUES (?, ?) '
                'ON CONFLICT(key) DO UPDATE SET entry = excluded.entry',
                (key, listing.to_json()),
            )


ListingCacheSetting = str | os.PathLike[str] | ListingStore | None
