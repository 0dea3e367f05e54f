"""Filling the pending tool vectors in the background: on the process's embedding loop (`loop.embedding_loop`),
from the store, then the embedder; once for every process sharing a store that takes claims; and how long a
search waits for them (`Fill.wait_for_tools`).

The first search of a run (and the first of a run after its tool set gained texts without a vector) waits for
missing vectors at most `ToolProxyConfig.embedding_wait` seconds times the share of its tools' texts still without a
vector (`wait_budget`: the whole wait when none has one, a tenth of it when a tenth is missing), and only while
waiting can pay off (`worth_waiting`: until the first texts arrive, then while the rest can arrive within the budget
at the pace measured); every search ranks what has no vector yet by keywords alone. An embedder error, or an embedder call past
`ToolProxyConfig.embedding_timeout`, makes the missing tools wait for a retry (`RETRY_SECONDS` later).

A process that ends (the interpreter exits) lets each embedding under way finish the batch in flight, at most
`EXIT_WAIT` seconds, so its vectors are stored, starts no other, and releases the claims it still holds
(`finish_at_exit`): the next process sharing the store embeds the rest at once, instead of waiting for claims of a
process that is gone to expire.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import concurrent.futures.thread  # imported before `_register_exit`, so `finish_at_exit` runs before its exit hook
import contextlib
import itertools
import os
import random
import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, cast

from .. import _core
from ..stores.protocol import supports_claims
from . import batches
from .batches import EmbedCounts, TextBatches
from .loop import embedding_loop, joined

if TYPE_CHECKING:
    from ..stores.protocol import ClaimingStore
    from .protocol import VectorHolder

__all__ = (
    'BATCH_SECONDS',
    'CLAIM_POLL',
    'CLAIM_POLL_MAX',
    'CLAIM_SLACK',
    'CLAIM_WINDOW',
    'EXIT_WAIT',
    'FIRST_CLAIM',
    'MAX_RUNS_REMEMBERED',
    'MIN_CLAIM',
    'RETRY_SECONDS',
    'WAIT_POLL',
    'Fill',
    'finish_at_exit',
    'wait_budget',
    'worth_waiting',
)

RETRY_SECONDS = 10.0
"""After an embedder error, missing tool vectors are asked for again this many seconds later (at a search)."""
CLAIM_POLL = 0.05
"""Seconds before a process waiting for texts another process claimed first reads the store again (doubling)."""
CLAIM_POLL_MAX = 0.25
"""The longest pause between two reads of the store while waiting for claimed texts."""
CLAIM_WINDOW = 512
"""Hashes one `claim_many` call is asked about (`Fill._claim_some`)."""
POLL_HASHES_PER_SECOND = 100_000
"""While waiting for claimed texts, the store is read at most this many hashes a second (a long wait over many
texts reads less often than every `CLAIM_POLL_MAX`)."""
CLAIM_SLACK = 10.0
"""Seconds a claim lasts beyond two `embedding_timeout`s (one batch's call, and its store write)."""
MAX_RUNS_REMEMBERED = 4096
"""Runs whose first search already waited (`Fill.wait_for_tools`), remembered per surface (oldest dropped)."""
FIRST_CLAIM = 16
"""Texts the first claimed batch of a process holds (`Fill._claim_limit`): its answer tells the embedder's pace."""
MIN_CLAIM = 4
"""Fewest texts a claimed batch holds."""
BATCH_SECONDS = 2.0
"""What a claimed batch should take at the pace measured (`Fill._claim_limit`): long enough for a provider's batch
of `BATCH_INPUTS` texts, short enough that a process that ends stores its batch in flight within `EXIT_WAIT`."""
EXIT_WAIT = 5.0
"""Most seconds a process that ends waits for the batch in flight of each embedding under way (`finish_at_exit`)."""
WAIT_POLL = 0.1
"""Seconds between two looks at the progress of the embedding a search waits for (`worth_waiting`)."""

_FILLS: weakref.WeakSet[Fill] = weakref.WeakSet()
"""The fills that started an embedding in this process (`finish_at_exit` visits them)."""
_EXIT_HOOK: list[int] = []
"""The pid whose interpreter exit runs `finish_at_exit` (registered once per process, again in a forked child)."""
_EXIT_LOCK = threading.Lock()


def worth_waiting(arrived: int, left_now: int, waited: float, wait_left: float) -> bool:
    """Whether a search that waits for tool vectors should go on waiting: this process's embedder delivered `arrived`
    texts since the search began waiting `waited` seconds ago, `left_now` texts are pending, and `wait_left` seconds
    of its wait are left (`Fill.wait_budget`).

    Until the first texts arrive the pace is unknown: wait (a model loading, the first batch). Then wait only when
    the pending texts can all arrive within what is left of the wait at the pace measured since the search began
    (`left_now` x `waited` / `arrived` <= `wait_left`): a backlog far from done (a large tool set, a slow local
    model) costs the search no wait it cannot turn into a complete ranking; the embedding goes on in the background.
    """
    if left_now <= 0 or wait_left <= 0:
        return False
    if arrived <= 0:
        return True
    return left_now * waited / arrived <= wait_left


def wait_budget(wait: float, missing_share: float) -> float:
    """Seconds a search may wait for tool vectors: `wait` (`ToolProxyConfig.embedding_wait`) times the share of its
    tools' texts without a vector (`ToolVectors.missing_share`, looked at again as vectors arrive, the store's
    first). A search whose tools all lack a vector may wait the whole `wait`; one that misses a tenth of them (a
    short-lived process after others embedded most of the backlog) waits a tenth of it: what waiting can add to the
    ranking is proportional to what is missing, so the wait is too."""
    return wait * min(1.0, max(0.0, missing_share))


def _register_exit() -> None:
    """Make this process run `finish_at_exit` when its interpreter exits: with the threading module's exit hooks
    (run before the thread pools' own, which stop accepting work, so a batch in flight can still be stored from a
    worker thread), else `atexit`."""
    with _EXIT_LOCK:
        if _EXIT_HOOK and _EXIT_HOOK[0] == os.getpid():
            return
        _EXIT_HOOK[:] = [os.getpid()]
        register = getattr(threading, '_register_atexit', None)
        try:
            if register is None:
                raise RuntimeError('no threading exit hooks')
            register(finish_at_exit)
        except RuntimeError:  # the interpreter is already shutting down, or no such hook: atexit, run later
            atexit.register(finish_at_exit)


def finish_at_exit(wait: float = EXIT_WAIT) -> None:
    """Let every embedding under way in this process store its batch in flight and stop (`Fill.close`), each
    waited for at most `wait` seconds, then release the claims still held. Run once when the interpreter exits
    (`_register_exit`); harmless when called again."""
    deadline = time.monotonic() + wait
    for fill in list(_FILLS):
        fill.close(max(0.0, deadline - time.monotonic()))


class Fill:
    """The background embedding of one surface's pending tool texts, and the searches' claims on them."""

    def __init__(self, vectors: VectorHolder, texts: TextBatches) -> None:
        self.vectors = vectors
        self.texts = texts
        """Embeds the texts no store holds (`TextBatches.embed_texts`)."""
        self.claims: dict[bytes, int] = {}
        """Fingerprint -> how many searches wait for it (`claim`): kept pending even while no index wants it (a
        concurrent run moved the shared index to its own tools), so interleaved tenants cannot starve each other."""
        self._task: concurrent.futures.Future[None] | None = None
        """The embedding under way on `embedding_loop` (`wait_for_tools`), started by process `_task_pid`."""
        self._task_pid = 0
        self._runs: OrderedDict[str, int] = OrderedDict()
        """Run id -> `ToolVectors.tools_changed` when that run's first search waited (`wait_for_tools`)."""
        self._retry_at = 0.0
        self._closing = False
        """The process is ending (`close`): the embedding under way stores its batch in flight and stops."""
        self._held: dict[bytes, str] = {}
        """Fingerprint -> store key of the texts this process claimed in the store and has not released yet."""
        self._pace: float | None = None
        """Seconds per text of the claimed batches embedded so far (a running mean), None before the first."""

    def restart(self) -> None:
        """The model in use changed (`ToolVectors.switch_model`): no claim stands, the next search starts a fill for
        the new model at once (the other model's fill stores its batch in flight, then stops)."""
        self.claims.clear()
        self._retry_at = 0.0
        self._task = None

    def retry_now(self) -> None:
        """Let the next search ask the embedder again at once (stale store vectors were dropped)."""
        self._retry_at = 0.0

    def retry_later(self) -> None:
        """An embedder error: searches ask the embedder again `RETRY_SECONDS` from now, not before."""
        self._retry_at = time.monotonic() + RETRY_SECONDS

    def claim(self, index: _core.SearchIndex) -> list[bytes]:
        """Mark the pending texts `index` wants as waited for by a search and return their fingerprints, for
        `release` once the search stops waiting. Call with the vectors' lock held."""
        claimed = self.vectors.missing(index)
        for fingerprint in claimed:
            self.claims[fingerprint] = self.claims.get(fingerprint, 0) + 1
        return claimed

    def release(self, claimed: list[bytes]) -> None:
        """Undo `claim(...)`'s marks. Call with the vectors' lock held."""
        for fingerprint in claimed:
            left = self.claims.get(fingerprint, 0) - 1
            if left > 0:
                self.claims[fingerprint] = left
            else:
                self.claims.pop(fingerprint, None)

    async def fill(self) -> None:
        """Get a vector for every pending text: from the store, then the embedder, again for texts that became
        pending meanwhile (a later step's new tools). Errors (an embedder call past `embedding_timeout` too): logged
        once, retried `RETRY_SECONDS` later."""
        vectors = self.vectors
        done: set[bytes] = set()
        generation = vectors.generation
        key = vectors.current_key()
        try:
            while not self._closing:
                with vectors.lock:
                    held = vectors.held_key
                    if key is not None and held is not None and key != held:
                        break  # the model in use changed: a search of the other model starts its own embedding
                    if generation != vectors.generation:  # stale store vectors were dropped: try their texts again
                        generation = vectors.generation
                        done.clear()
                    pending = vectors.take_pending(self.claims)
                if done:
                    pending = {fp: t for fp, t in pending.items() if fp not in done}
                if not pending:
                    break
                done.update(pending)  # each text is tried once per fill, so a text the core refuses cannot loop
                present: set[bytes] = set()
                found = await vectors.stores.get(list(pending), key, present)
                if found:
                    with vectors.lock:
                        held = vectors.held_key
                        if key is None or held is None or key == held:
                            vectors.apply(found)
                            vectors.dimension_policy.note_store(found, pending)
                missing = {} if len(found) == len(pending) else {fp: t for fp, t in pending.items() if fp not in found}
                if missing:
                    await self._embed_claimed(missing, key, present)
            vectors.log.ok('embed')
        except Exception as e:
            self.retry_later()
            vectors.log.warn(
                'embed',
                f'ToolProxy could not embed tool texts with {vectors.embedder.describe()} ({e!r}); tools without a '
                f'vector rank by keywords alone, retrying in {RETRY_SECONDS:g} s.',
            )

    async def _embed_claimed(self, texts: dict[bytes, str], key: str | None, present: set[bytes]) -> None:
        """Embed `texts` (none has a usable vector in the store) once for every process sharing the store: with a
        store that takes claims (`stores.supports_claims`), claim a batch, embed it, store it, release it; texts
        another process claimed are read from the store as they arrive (polled, `CLAIM_POLL` doubling up to
        `CLAIM_POLL_MAX` seconds). A text neither claimable nor stored for longer than a claim lasts (a claimer that
        hangs) is embedded here, and so is a text whose stored row this embedder cannot use (`present`: it cannot
        be claimed, its row is replaced). Other stores: embedded here at once."""
        vectors = self.vectors
        stores = vectors.stores
        store = stores.store()
        if store is None or key is None or not supports_claims(store):
            await self.texts.embed_texts(texts, EmbedCounts())
            return
        claiming = cast('ClaimingStore', store)
        seconds = 2 * vectors.config.embedding_timeout + CLAIM_SLACK
        left = dict(texts)
        unusable = {fp: left.pop(fp) for fp in present if fp in left}
        if unusable:
            await self.texts.embed_texts(unusable, EmbedCounts())
        pause = CLAIM_POLL
        stalled_since = time.monotonic()
        while left and not self._closing:
            with vectors.lock:
                if vectors.held_key is not None and key != vectors.held_key:
                    return  # the model in use changed: its own fill embeds for it
            limit = self._claim_limit()
            try:
                mine = await self._claim_some(claiming, key, list(left), limit, seconds)
            except Exception as e:
                vectors.log.warn('store', f'ToolProxy embedding cache claims failed, embedding here: {e!r}')
                mine = list(itertools.islice(left, limit))
            if not mine and time.monotonic() - stalled_since > seconds:  # nobody delivers them: embed them here
                mine = list(itertools.islice(left, limit))
            if mine:
                todo = {fp: left.pop(fp) for fp in mine if fp in left}
                self._held.update(dict.fromkeys(mine, key))
                began = time.monotonic()
                try:
                    await self.texts.embed_texts(todo, EmbedCounts())
                    self._note_pace(time.monotonic() - began, len(todo))
                finally:
                    with contextlib.suppress(Exception):
                        await stores.call(claiming.release_many, key, mine)
                    for fingerprint in mine:
                        self._held.pop(fingerprint, None)
                pause, stalled_since = CLAIM_POLL, time.monotonic()
                continue
            await asyncio.sleep(pause)
            pause = min(2 * pause, max(CLAIM_POLL_MAX, len(left) / POLL_HASHES_PER_SECOND))
            arrived: set[bytes] = set()
            found = await stores.get(list(left), key, arrived)
            if found:
                with vectors.lock:
                    if vectors.held_key is None or key == vectors.held_key:
                        vectors.apply(found)
                        vectors.dimension_policy.note_store(found, left)
                for fingerprint in found:
                    left.pop(fingerprint, None)
                stalled_since = time.monotonic()
            unusable = {fp: left.pop(fp) for fp in arrived if fp in left}
            if unusable:  # another process stored a vector this embedder cannot use: replace it
                await self.texts.embed_texts(unusable, EmbedCounts())

    def _claim_limit(self) -> int:
        """How many texts to claim next: `FIRST_CLAIM` before the embedder's pace is known, then what it embeds in
        `BATCH_SECONDS` (between `MIN_CLAIM` and `batches.BATCH_INPUTS`). A provider answering a batch in well under
        a second gets full batches at once; a CPU model on a busy machine gets small ones, so that a short-lived
        process stores what it embedded before it ends, and a search learns the pace early (`worth_waiting`)."""
        if self._pace is None:
            return min(FIRST_CLAIM, batches.BATCH_INPUTS)
        most = batches.BATCH_INPUTS
        return max(min(MIN_CLAIM, most), min(most, int(BATCH_SECONDS / max(self._pace, 1e-6))))

    def _note_pace(self, seconds: float, texts: int) -> None:
        """A claimed batch of `texts` took `seconds`: fold it into the pace (half the old, half the new)."""
        if texts:
            pace = seconds / texts
            self._pace = pace if self._pace is None else (self._pace + pace) / 2

    async def _claim_some(
        self, claiming: ClaimingStore, key: str, hashes: list[bytes], limit: int, seconds: float
    ) -> list[bytes]:
        """Claim up to `limit` of `hashes`, asking the store about `CLAIM_WINDOW` of them at a time (so a claim costs
        the same at 100,000 new texts as at 640), from a window chosen at random (processes started together start
        apart), on to the next until one yields claims or every window was asked."""
        windows = max(1, -(-len(hashes) // CLAIM_WINDOW))
        first = random.randrange(windows)
        for step in range(windows):
            at = (first + step) % windows * CLAIM_WINDOW
            mine = await self.vectors.stores.call(
                claiming.claim_many, key, hashes[at : at + CLAIM_WINDOW], limit=limit, seconds=seconds
            )
            if mine:
                return mine
        return []

    def close(self, wait: float) -> None:
        """The process is ending: the embedding under way (if any) finishes its batch in flight, stores it and
        starts no other; it is waited for up to `wait` seconds (from any thread but the embedding loop's). Then
        the claims this process still holds in the store are released (a batch still in flight is given up: its
        texts are free for the next process at once, not after the claims expire)."""
        self._closing = True
        if self._task_pid != os.getpid():  # a forked child's copy: the claims are its parent's
            self._held = {}
            return
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                task.result(timeout=wait)
        held, self._held = self._held, {}
        store = self.vectors.stores.store()
        if not held or store is None or not supports_claims(store):
            return
        by_key: dict[str, list[bytes]] = {}
        for fingerprint, key in held.items():
            by_key.setdefault(key, []).append(fingerprint)
        for key, hashes in by_key.items():
            with contextlib.suppress(Exception):  # a store that fails here: its claims expire by themselves
                cast('ClaimingStore', store).release_many(key, hashes)

    async def wait_for_tools(self, wait: float, run_id: str | None = None) -> None:
        """Start (or join) embedding the pending texts on the process's embedding loop (`embedding_loop`) and wait
        for it up to `wait` seconds; it goes on past that, and past the end of this run and its event loop.

        Only a run's first search waits (and its first after the run's tools gained texts without a vector): a
        later search of run `run_id` starts or joins the embedding without waiting, and ranks what has a vector.
        Without a `run_id` every call waits. It waits at most `wait` times the share of texts still missing
        (`wait_budget`), and only while waiting can pay off (`worth_waiting`): until the first texts arrive, then
        while the pending ones can all arrive within the budget at the pace measured. The
        embedding runs in a copy of this call's context (an `Embedder.override` active here is the model that
        embeds); one embedding at a time per surface, joined by every search of every thread and loop, so each text
        is embedded once."""
        vectors = self.vectors
        if run_id is not None:
            with vectors.lock:
                if self._runs.get(run_id) == vectors.tools_changed:
                    wait = 0.0
                else:
                    self._runs[run_id] = vectors.tools_changed
                    self._runs.move_to_end(run_id)
                    while len(self._runs) > MAX_RUNS_REMEMBERED:
                        self._runs.popitem(last=False)
        if not vectors.pending or not vectors.background:
            return
        with vectors.lock:  # one search starts the embedding; the others join it
            task = self._task
            if task is not None and (task.done() or self._task_pid != os.getpid()):  # a fork's copy never ends
                task = self._task = None
            if task is None:
                if not vectors.pending or time.monotonic() < self._retry_at:
                    return
                # The callback scheduling the task copies this thread's context: the fill sees this search's
                # context (an Embedder.override, for one).
                if self._closing:
                    return
                task = self._task = asyncio.run_coroutine_threadsafe(self.fill(), embedding_loop())
                self._task_pid = os.getpid()
                _FILLS.add(self)
                _register_exit()
        await self._wait(task, wait)

    async def _wait(self, task: concurrent.futures.Future[None], wait: float) -> None:
        """Wait for `task` at most `wait_budget(wait, ...)` seconds (the budget looked at again every `WAIT_POLL`
        seconds, as the share of missing vectors falls), while `worth_waiting` says waiting can pay off."""
        if wait <= 0 or task.done():
            return
        vectors = self.vectors
        began, embedded = time.monotonic(), vectors.embedded
        waiter = asyncio.ensure_future(joined(task))
        try:
            while True:
                waited = time.monotonic() - began
                left = wait_budget(wait, vectors.missing_share()) - waited
                if not worth_waiting(vectors.embedded - embedded, vectors.pending, waited, left):
                    return
                done, _ = await asyncio.wait({waiter}, timeout=min(WAIT_POLL, left))
                if done:
                    return
        finally:  # past the wait the fill goes on; it logs its own errors
            if waiter.done():
                with contextlib.suppress(BaseException):
                    waiter.result()
            else:
                waiter.cancel()
