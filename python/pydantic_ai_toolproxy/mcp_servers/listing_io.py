"""Reading and writing the MCP listing cache without holding the event loop (for `mcp_servers.toolset.MCPServerToolset`):
the entries of one file's servers are read at once in worker threads within `STORE_TIMEOUT` (`load_entries`), and a
read of a key waits, bounded, for this process's write of that key under way (`_writes`), so a run reads what the
previous run stored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..mcp_listing_cache import ListingStore, ServerListing

__all__ = ('STORE_TIMEOUT', 'CachedSource', 'SharedListing', 'load_entries', 'write_entry')

logger = logging.getLogger('pydantic_ai_toolproxy')


STORE_TIMEOUT = 2.0
"""Seconds the listing cache may take to read the entries of one file's servers (all at once, at construction) or
to answer one read at run time; a store past it counts as empty (one warning). Writes never wait: they run in a
thread of their own."""


_writes: dict[tuple[object, str], threading.Thread] = {}
"""(the store, key) -> the thread writing that entry now: a read of the same key in this process waits for it
(bounded like every read), so a run reads what the previous run stored, also through another store object of the
same file (`_store_slot`)."""


def _store_slot(store: ListingStore) -> object:
    """What names a store in `_writes`: a file store's resolved path (two capabilities opening the same file are one
    store: one writes, the other reads), else the store object's identity."""
    path = getattr(store, 'path', None)
    if isinstance(path, Path):
        try:
            return ('path', str(path.resolve()))
        except OSError:
            return ('path', str(path))
    return id(store)


_writes_lock = threading.Lock()


def _read_entry(store: ListingStore, key: str, timeout: float = STORE_TIMEOUT) -> ServerListing | None:
    """`store.get(key)` with its tools validated (`ServerListing.mcp_tools`), in a worker thread, after this
    process's write of that key (if one is under way, waited for up to `timeout` seconds).

    Raises:
        Exception: what the store raises, or ValueError for an entry whose tools the MCP SDK rejects.
    """
    with _writes_lock:
        writing = _writes.get((_store_slot(store), key))
    if writing is not None:
        writing.join(timeout)
    entry = store.get(key)
    if entry is not None and not isinstance(entry, ServerListing):
        raise TypeError(f'{type(store).__name__}.get returned a {type(entry).__name__}, not a ServerListing')
    if entry is not None:
        entry.mcp_tools()
    return entry


@dataclass
class SharedListing:
    """What the run copies of one `MCPServerToolset` share: the listing cache entry and the log-once flags."""

    entry: ServerListing | None = None
    """The last listing known (read from the store once, replaced by each live start)."""
    loaded: bool = False
    store_failed: bool = False
    left_out: set[str] = field(default_factory=set)
    """Names of listed tools already warned about as unusable (one warning each per server)."""
    write: threading.Thread | None = None
    """The thread storing the last live listing (None: nothing written yet)."""
    written: bool | None = None
    """Whether the last write stored the listing (None: none finished yet)."""
    description: str | None = None
    """The group description from what the server said (`mcp_servers.describe.described`): set from its cached entry at
    construction, else at its first live start; never changed once set (None: not yet, or nothing usable)."""
    listeners: list[Callable[[str], bool]] = field(default_factory=list)
    """Told `description` when it is set at a live start (`bind_description`); one answering False is dropped."""


class CachedSource(Protocol):
    """What `load_entries` reads and sets of a server's source (`toolset.MCPServerToolset` is one)."""

    server: str
    listing_store: ListingStore | None
    cache_key: str
    shared: SharedListing


def load_entries(toolsets: Sequence[CachedSource], timeout: float = STORE_TIMEOUT) -> None:
    """Read the listing cache entries of `toolsets` not loaded yet, all within `timeout` seconds (one worker thread
    per store, each reading its keys one after another; the caller waits at most `timeout` in all, never once per
    server). An entry the store could not give in time, or that raised, counts as missing (one warning per
    store, naming its servers); an entry whose tools the MCP SDK rejects counts as missing too (one warning
    naming the server)."""
    pending = [ts for ts in toolsets if not ts.shared.loaded and ts.listing_store is not None]
    if not pending:
        return
    by_store: dict[int, list[CachedSource]] = {}
    for ts in pending:
        by_store.setdefault(id(ts.listing_store), []).append(ts)
    results: dict[int, tuple[bool, object]] = {}

    def read(group: list[CachedSource]) -> None:
        for ts in group:
            assert ts.listing_store is not None
            try:
                results[id(ts)] = (True, _read_entry(ts.listing_store, ts.cache_key))
            except Exception as exc:
                results[id(ts)] = (False, exc)

    threads = [
        threading.Thread(target=read, args=(group,), name='toolproxy-listing-read', daemon=True)
        for group in by_store.values()
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = TimeoutError(f'no answer within {timeout:g} s')
    for group in by_store.values():
        failed: list[tuple[CachedSource, BaseException]] = []
        for ts in group:
            ok, found = results.get(id(ts), (False, late))
            ts.shared.loaded = True
            if ok:
                ts.shared.entry = found if isinstance(found, ServerListing) else None
            elif isinstance(found, ValueError):
                logger.warning(
                    'MCP listing cache entry of server %r is unreadable (%s); it counts as missing',
                    ts.server,
                    (str(found).splitlines() or [''])[0][:300],
                )
            else:
                failed.append((ts, found if isinstance(found, BaseException) else late))
        if failed:  # one warning per store, naming its servers
            for ts, _ in failed:
                ts.shared.store_failed = True
            exc = failed[0][1]
            logger.warning(
                'MCP listing cache %r failed (%s: %s) for %s %s; started as without a cache',
                failed[0][0].listing_store,
                type(exc).__name__,
                exc,
                'server' if len(failed) == 1 else 'servers',
                ', '.join(repr(ts.server) for ts, _ in failed),
            )


def write_entry(
    store: ListingStore, key: str, entry: ServerListing, shared: SharedListing, failed: Callable[[BaseException], None]
) -> None:
    """Store `entry` under `key` in a worker thread of its own (the caller never waits: `shared.write` is that
    thread, `shared.written` whether it stored the entry, None until it is done). Writes of one key land in the
    order they were made, and a read of the key in this process waits for the write under way (`_writes`).
    `failed` is called, in that thread, with what the store raised."""
    slot = (_store_slot(store), key)
    before = shared.write

    def write() -> None:
        try:
            if before is not None:  # writes of one server land in the order they were made
                before.join()
            store.put(key, entry)
        except Exception as exc:
            shared.written = False
            failed(exc)
        else:
            shared.written = True
        finally:
            with _writes_lock:
                if _writes.get(slot) is thread:
                    del _writes[slot]

    shared.written = None
    thread = threading.Thread(target=write, name='toolproxy-listing-write', daemon=True)
    with _writes_lock:
        _writes[slot] = shared.write = thread
    thread.start()
