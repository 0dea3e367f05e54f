"""The MCP listing cache: each server's last `tools/list` answer, so a lazy run can search before any server starts.

`ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=...)` reads it at run entry: a server whose
entry is fresh is not started until `call_proxy_tool` targets one of its tools; search ranks the cached tools
(their complete schemas, as the server listed them). Every start of a server stores what it listed.

An entry is keyed by `listing_key`: the server's name and a SHA-256 of what defines its process (transport kind,
command, args, cwd, url, the names of its environment variables and headers with a hash of each value, and the
size and modification time of the command's executable and of the first argument that names an existing file (the
script of `python server.py`), so an upgraded script or binary is a new key), plus `LISTING_FORMAT`. A server
upgraded behind the same files (`uvx pkg`, `npx -y pkg`) keeps its key: its entry ages out, and a lazy start
that finds another listing replaces it at once. An entry stores the tools as the server listed
them (MCP `Tool` JSON), the server's `serverInfo` name, version and title, its `instructions`, when it was fetched
and the server's `ttlMs` hint. Secrets never reach the store: environment and header values are only hashed into
the key.

Age: an entry is fresh for the server's `ttlMs` when that is above zero (MCP's "0 = do not cache" is not taken
as "forever"), else for `max_age` seconds (`DEFAULT_MAX_AGE`, one day). `toolproxy --mcp-config F refresh`
re-lists every server.

Stores: `SQLiteListingStore` (the default, a file beside the embedding cache: `default_listing_cache_path`),
`MemoryListingStore`, or any object with the `ListingStore` methods. A store that fails (unreadable file, locked
database) is logged once on the `pydantic_ai_toolproxy` logger and acts as empty: the servers are started as
without a cache, never a failed run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = (
    'DEFAULT_MAX_AGE',
    'LISTING_CACHE_ENV',
    'LISTING_FORMAT',
    'ListingStore',
    'MemoryListingStore',
    'SQLiteListingStore',
    'ServerListing',
    'default_listing_cache_path',
    'listing_key',
    'open_listing_store',
)

logger = logging.getLogger('pydantic_ai_toolproxy')

LISTING_FORMAT = 1
"""The entry format; part of every key, so entries of another build are never read."""

DEFAULT_MAX_AGE = 86_400.0
"""Seconds an entry stays fresh when its server announced no `ttlMs` above zero."""

LISTING_CACHE_ENV = 'TOOLPROXY_LISTING_CACHE'


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
        ttl_ms: The server's `ttlMs` cache hint on the listing, milliseconds (None or 0: no hint).
    """

    tools: tuple[dict[str, Any], ...]
    server_name: str | None = None
    server_version: str | None = None
    server_title: str | None = None
    instructions: str | None = None
    fetched_at: float = 0.0
    ttl_ms: int | None = None

    def fresh(self, max_age: float = DEFAULT_MAX_AGE, now: float | None = None) -> bool:
        """Whether the entry may still be served: younger than the server's `ttlMs` when above zero, else than
        `max_age` seconds."""
        age = (time.time() if now is None else now) - self.fetched_at
        limit = self.ttl_ms / 1000 if self.ttl_ms else max_age
        return 0 <= age <= limit

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
            ttl_ms=int(data['ttl_ms']) if isinstance(data.get('ttl_ms'), int) else None,
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


def default_listing_cache_path() -> Path | None:
    """The default listing cache file: `$TOOLPROXY_LISTING_CACHE` when set (`off`: no cache, None), else
    `mcp-listings.sqlite3` beside the default embedding cache (`$XDG_CACHE_HOME/pydantic-ai-toolproxy/`, with
    `~/.cache` when `XDG_CACHE_HOME` is unset; the folder of `$TOOLPROXY_EMBEDDING_CACHE` when that names a file).
    Read at each call."""
    from .embedding_store import default_embedding_cache_path

    chosen = os.environ.get(LISTING_CACHE_ENV, '')
    if chosen.strip().lower() == 'off':
        return None
    if chosen:
        return Path(chosen).expanduser()
    beside = default_embedding_cache_path()
    if beside is None:  # the embedding cache is off: the XDG folder all the same
        xdg = os.environ.get('XDG_CACHE_HOME', '')
        folder = (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / '.cache') / 'pydantic-ai-toolproxy'
    else:
        folder = beside.parent
    return folder / 'mcp-listings.sqlite3'


ListingCacheSetting = str | os.PathLike[str] | ListingStore | None


def open_listing_store(setting: object, *, field: str = 'listing_cache') -> ListingStore | None:
    """The store a `listing_cache` setting names: `'default'` (`default_listing_cache_path`), a path (`~` expanded),
    `'off'` or None (no cache), or a `ListingStore` object as is.

    Raises:
        TypeError: naming `field`, for a value of another type.
    """
    if setting is None:
        return None
    if isinstance(setting, str) and setting.strip().lower() == 'off':
        return None
    if isinstance(setting, str) and setting == 'default':
        path = default_listing_cache_path()
        return None if path is None else SQLiteListingStore(path)
    if isinstance(setting, (str, os.PathLike)):
        return SQLiteListingStore(setting)
    if isinstance(setting, ListingStore):
        return setting
    raise TypeError(
        f"{field} must be a path, 'default', 'off', None or an object with get(key) and put(key, listing), "
        f'got {type(setting).__name__}'
    )


def _hashed(value: object) -> str:
    return hashlib.sha256(str(value).encode('utf-8', 'surrogatepass')).hexdigest()


def _file_stamp(path: str, cwd: str | None) -> list[Any] | None:
    """`[path, size, mtime_ns]` of an existing file `path` (relative to `cwd`), else None."""
    candidate = Path(path)
    if not candidate.is_absolute() and cwd:
        candidate = Path(cwd) / candidate
    try:
        if candidate.is_file():
            stat = candidate.stat()
            return [str(candidate), stat.st_size, stat.st_mtime_ns]
    except OSError:
        return None
    return None


def listing_key(server: str, transport: object) -> str:
    """The cache key of the MCP server named `server` started through `transport` (a FastMCP transport, or a URL
    string): `<LISTING_FORMAT>:<server>:<sha256 hex>` (see the module docstring for what the hash covers).

    Never raises: attributes a transport lacks are left out of the hash.
    """
    material: dict[str, Any] = {'format': LISTING_FORMAT, 'server': server, 'kind': type(transport).__name__}
    if isinstance(transport, str):
        material['url'] = transport
    else:
        command = getattr(transport, 'command', None)
        args = getattr(transport, 'args', None)
        cwd = getattr(transport, 'cwd', None)
        url = getattr(transport, 'url', None)
        env = getattr(transport, 'env', None)
        headers = getattr(transport, 'headers', None)
        material['command'] = command if isinstance(command, str) else None
        material['args'] = [str(a) for a in args] if isinstance(args, Sequence) and not isinstance(args, str) else None
        material['cwd'] = str(cwd) if cwd is not None else None
        material['url'] = str(url) if url is not None else None
        for name, values in (('env', env), ('headers', headers)):
            if isinstance(values, Mapping):
                material[name] = sorted((str(k), _hashed(v)) for k, v in values.items())
        stamps: list[Any] = []
        if isinstance(command, str):
            found = shutil.which(command, path=(env or {}).get('PATH') if isinstance(env, Mapping) else None)
            if found is not None:
                stamps.append(_file_stamp(found, None))
        for arg in material['args'] or []:  # the first argument naming a file: the script a command runs
            if len(arg) < 4096 and not arg.startswith('-') and (stamp := _file_stamp(arg, material['cwd'])):
                stamps.append(stamp)
                break
        material['files'] = [s for s in stamps if s is not None]
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()
    return f'{LISTING_FORMAT}:{server[:100]}:{digest}'
