"""Tool vectors for hybrid search: computed once, kept in the Rust index, and the query side's vector.

`ToolVectors` (one per proxy surface with an embedder) follows every `_core.SearchIndex` the index cache holds:
each upserted tool's embedding text (`_embedding_text`) is fingerprinted; a vector already known (this process's
memory, then the `EmbeddingStore`) is attached at once with `SearchIndex.set_vectors`; the others are embedded in
the background with `embed_documents`, in batches within the model's limits, and attached when they arrive. A tool
whose text changes loses its vector until the new one is known; a removed tool's vector goes with its record.

The first search of a run (and the first of a run after its tool set gained texts without a vector) waits for
missing vectors up to `ToolProxyConfig.embedding_wait` seconds; every search ranks what has no vector yet by
keywords alone. An embedder error, or an embedder call past `ToolProxyConfig.embedding_timeout`, makes the missing
tools wait for a retry (`RETRY_SECONDS` later).

Every embedder call (tool texts and queries) runs on one event loop per process, on a daemon thread of its own
(`embedding_loop`), not on the loop of the run that asked (a provider's HTTP connections belong to the loop that
opened them, so one loop serves them all): a run's `asyncio.run` ending, or threads each running `agent.run_sync` on their own loop,
neither cancels a batch in flight nor drops its answer, which is kept in memory and in the store whichever run asked;
a search joins the one embedding under way. The embedding runs in a copy of the asking search's context, so an
`Embedder.override(model=...)` active there is the model that embeds.

Vectors are keyed by the model that produced them (`ResolvedEmbedder.store_key` in the context of the call that
embedded them: the override's model under `Embedder.override`): in memory, in the store, and the query vectors. A search whose
model differs from the one the held vectors came from (an override entered or left) switches: the indexes drop
every vector and are rebuilt with the vectors known for that model (`switch_model`). Faults are logged on the `pydantic_ai_toolproxy` logger,
once per kind until that kind succeeds again; nothing reaches the model.

The embedder decides the dimensionality: store vectors are taken on trust until the embedder produces a vector
(a tool's, or a query's); one of another size makes every store vector taken so far stale (`adopt_dimensions`):
they are dropped, embedded again and replaced in the store, with one warning. A model without a name of its own
(`ResolvedEmbedder.named`) never uses a shared store (one warning saying how to name it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import operator
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from pydantic_ai.usage import RequestUsage

from . import _core
from ._embedder import EmbedderTimeout, ResolvedEmbedder, bounded, vector_bytes
from ._embedding_text import embedding_text, group_text, text_hash
from .stores.opening import open_embedding_store
from .stores.protocol import is_shared, supports_claims

if TYPE_CHECKING:
    from pydantic_ai.toolsets.abstract import ToolsetTool

    from ._directory import Directory, IndexRecord
    from .config import ToolProxyConfig
    from .stores.protocol import ClaimingStore, EmbeddingStore

__all__ = ('EmbedCounts', 'ProxySurface', 'ToolVectors', 'embed_surface', 'open_store', 'surface_texts')

logger = logging.getLogger('pydantic_ai_toolproxy')


class ProxySurface(Protocol):
    """What `embed_surface` and `surface_texts` need of a `ToolProxyCapability` (typed by shape, so this module does
    not import the capability, which imports it through its runtime)."""

    @property
    def groups(self) -> Mapping[str, Any]:
        """Group name -> `ToolProxyGroup` (its `description`)."""
        ...

    @property
    def tool_vectors(self) -> ToolVectors | None:
        """The surface's `ToolVectors`, None without an embedder."""
        ...

    def directory_of(self, tools: Mapping[str, ToolsetTool[Any]]) -> Directory:
        """The surface's grouped directory of one step's prepared tools."""
        ...


BATCH_INPUTS = 64
"""Most texts in one `embed_documents` call."""
BATCH_TOKENS = 100_000
"""Most estimated tokens in one `embed_documents` call (providers cap a request's total, e.g. OpenAI at 300,000)."""
MAX_FAILED_CALLS = 8
"""Failed `embed_documents` calls in a row after which a pass stops (an outage): halving a batch of `BATCH_INPUTS`
texts down to one refused text fails at most log2(64) + 1 = 7 times in a row."""
QUERY_CACHE_SIZE = 256
"""Recent query vectors kept (least recently used dropped first)."""
RETRY_SECONDS = 10.0
"""After an embedder error, missing tool vectors are asked for again this many seconds later (at a search)."""
MEMORY_SLACK = 1024
"""Vectors kept in memory beyond twice the texts the followed indexes want, before unwanted ones are dropped."""
UNNAMED = (
    'ToolProxy embedding model {model} has no name of its own (model_name {name!r}), so its tool vectors stay in '
    "memory and the embedding cache is not used: another unnamed model's vectors would be read as its own. Name it: "
    "for a SentenceTransformer loaded from a folder, set st.model_card_data.model_id = 'org/model' before "
    "SentenceTransformerEmbeddingModel(st), or pass the folder path (SentenceTransformerEmbeddingModel('/path/to/"
    "model')); a model class of your own should return a distinct model_name."
)
"""The warning for a model without a name (`ResolvedEmbedder.named`) when a shared store is configured."""


CLAIM_POLL = 0.05
"""Seconds before a process waiting for texts another process claimed first reads the store again (doubling)."""
CLAIM_POLL_MAX = 0.25
"""The longest pause between two reads of the store while waiting for claimed texts."""
CLAIM_SLACK = 10.0
"""Seconds a claim lasts beyond two `embedding_timeout`s (one batch's call, and its store write)."""

MAX_DIMENSIONS = 16_384
"""Most dimensions the core accepts for a vector (`SearchIndex.set_vectors`)."""
MAX_RUNS_REMEMBERED = 4096
"""Runs whose first search already waited (`ToolVectors.wait_for_tools`), remembered per surface (oldest dropped)."""

T = TypeVar('T')

_LOOP_LOCK = threading.Lock()
_LOOP: list[tuple[int, asyncio.AbstractEventLoop]] = []
"""The process's embedding loop with the pid that started it (`embedding_loop`)."""


async def joined(future: concurrent.futures.Future[T]) -> T:
    """Await `future` (running on another thread's loop, e.g. `embedding_loop`) from the running loop and return
    its result (or raise its exception). Cancelling the awaiting task leaves `future` running; a loop that closes
    while it waits is never called back."""
    if not future.done():
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()

        def wake(_: object) -> None:
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                    loop.call_soon_threadsafe(arrived.set)

        future.add_done_callback(wake)
        await arrived.wait()
    return future.result()


def embedding_loop() -> asyncio.AbstractEventLoop:
    """The event loop tool texts are embedded on: one per process, running forever on a daemon thread
    (`pydantic-ai-toolproxy-embedding`), started on first use (again in a forked child, whose copy has no thread).
    Runs' loops come and go (`asyncio.run` per request, `run_sync` in threads); this one does not, so an embedding
    in flight is never cancelled by the end of the run that asked for it."""
    with _LOOP_LOCK:
        if _LOOP and _LOOP[0][0] == os.getpid() and not _LOOP[0][1].is_closed():
            return _LOOP[0][1]
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name='pydantic-ai-toolproxy-embedding', daemon=True)
        thread.start()
        _LOOP[:] = [(os.getpid(), loop)]
        return loop


def usable_vectors(
    found: Mapping[bytes, object], asked: Sequence[bytes], dimensions: int | None
) -> tuple[dict[bytes, bytes], int]:
    """`(usable, dropped)`: the vectors of a store's answer `found` (to `get_many(model, asked)`) that the core
    can take, as `bytes`, and how many were dropped: a hash not asked for, a value that is not bytes-like, empty,
    not a multiple of 4 bytes or over `MAX_DIMENSIONS`, of another dimensionality than `dimensions` (when None,
    than the first usable one), or holding a non-finite value. A store that is not a mapping raises TypeError.

    The usual answer (every hash asked for, every value `bytes` of one valid size) is checked in a few passes at C
    speed; the non-finite check is the core's (`_core.nonfinite_rows`, about 20 ms for 100,000 x 384)."""
    wanted = set(asked)
    values = list(found.values())
    if set(map(type, values)) <= {bytes} and found.keys() <= wanted:
        sizes = set(map(len, cast('list[bytes]', values)))
        size = next(iter(sizes), 4)
        fits = len(sizes) <= 1 and size and not size % 4 and size <= MAX_DIMENSIONS * 4
        if fits and (dimensions is None or size == dimensions * 4):
            return _drop_nonfinite(dict(zip(found.keys(), cast('list[bytes]', values), strict=True)), 0)
    usable: dict[bytes, bytes] = {}
    dropped = 0
    for fingerprint, value in found.items():
        if fingerprint not in wanted or not isinstance(value, (bytes, bytearray, memoryview)):
            dropped += 1
            continue
        vector = bytes(value)
        size = len(vector)
        if size == 0 or size % 4 or size > MAX_DIMENSIONS * 4 or (dimensions is not None and size != dimensions * 4):
            dropped += 1
            continue
        dimensions = size // 4
        usable[fingerprint] = vector
    return _drop_nonfinite(usable, dropped)


def _drop_nonfinite(usable: dict[bytes, bytes], dropped: int) -> tuple[dict[bytes, bytes], int]:
    """`(usable without the vectors holding a NaN or an infinity, dropped + how many those were)`."""
    bad = set(_core.nonfinite_rows(list(usable.values()))) if usable else set()
    if bad:
        for fingerprint in [fp for at, fp in enumerate(usable) if at in bad]:
            del usable[fingerprint]
    return usable, dropped + len(bad)


def open_store(config: ToolProxyConfig) -> EmbeddingStore | None:
    """The store `config.embedding_cache` names (`stores.open_embedding_store`): None (memory only), the given
    `EmbeddingStore`, a `PostgresEmbeddingStore` for a `postgresql://` URL, or a `SQLiteEmbeddingStore` at a path
    (the default file for `DEFAULT_EMBEDDING_CACHE`). A bad file or database does not raise here: the stores fall
    back to memory themselves, with one warning."""
    return open_embedding_store(config.embedding_cache)


class StoreTimeout(Exception):
    """A store call past `embedding_timeout` (`ToolVectors._store_call`)."""


@dataclass
class EmbedCounts:
    """What one embedding pass did (`embed_surface`, and the CLI's `toolproxy embed`).

    Attributes:
        tools: Distinct tool texts of the surface.
        embedded: Texts embedded by the embedder in this pass.
        cached: Texts whose vector came from memory or the store.
        cut: Texts cut to the model's `max_input_tokens` before embedding (their vector covers the kept start).
        failed: Texts left without a vector (an embedder error; see the log).
        usage: The embedder's token usage, summed over its calls.
        seconds: Wall time of the pass.
        error: The embedder's error that stopped the pass (`repr`, at most 500 characters), or None.
    """

    tools: int = 0
    embedded: int = 0
    cached: int = 0
    cut: int = 0
    failed: int = 0
    usage: RequestUsage = field(default_factory=RequestUsage)
    seconds: float = 0.0
    error: str | None = None


@dataclass
class _IndexState:
    """Per `SearchIndex`: the text fingerprint each key wants, the one whose vector is attached, and the keys
    waiting for a pending vector (`waiting`: fingerprint -> the key, or a list when several keys of this index
    want one text; a key, not a tuple per tool, so that queuing 100,000 tools creates no objects the garbage
    collector has to walk)."""

    index: _core.SearchIndex
    wanted: dict[str, bytes] = field(default_factory=dict)
    attached: dict[str, bytes] = field(default_factory=dict)
    waiting: dict[bytes, str | list[str]] = field(default_factory=dict)


_FALLBACK_REASONS: dict[str, str] = {
    'query-timeout': "the query's embedding took longer than query_timeout",
    'embedder-error': 'the embedder failed on the query (its warning says why)',
    'no-vectors': 'no tool has a vector yet (the embedder is still working, or failing: see its warnings; or '
    'the cache holds vectors of other tool texts than this agent computes, e.g. other group descriptions)',
    'dimensions': "the query vector's size differs from the tools' vectors",
}
"""Why a search of a surface with an embedder ranked by keywords (`_search.Ranking.reason`), as logged once."""


class ToolVectors:
    """Tool and query vectors of one proxy surface (see the module docstring).

    `follow` and `apply` run under the index cache's lock (`lock`, shared with `SearchIndexCache`); the awaits
    (`wait_for_tools`, `query_vector`) run outside it.
    """

    def __init__(
        self,
        config: ToolProxyConfig,
        descriptions: Mapping[str, str],
        lock: Any,
        open_store: Callable[[], EmbeddingStore | None] = lambda: None,
    ) -> None:
        assert config.embedder is not None
        self.config = config
        self.embedder = ResolvedEmbedder(config.embedder)
        self.weight = float(config.semantic_weight)
        self._descriptions = dict(descriptions)
        self._tails = {group: group_text(group, text) for group, text in self._descriptions.items()}
        """Group -> its part of the embedding text (`group_text`), for `_core.embedding_fingerprints`."""
        self.lock = lock
        self._open_store = open_store
        self._store: EmbeddingStore | None = None
        self._store_opened = False
        self.refused_store = False
        """Whether the configured store is not used because the model has no name of its own (`store`)."""
        self.memory: dict[bytes, bytes] = {}
        """Text fingerprint -> little-endian float32 vector, every vector this process has seen."""
        self.dimensions: int | None = None
        self._states: dict[int, _IndexState] = {}
        self._pending: dict[bytes, str] = {}
        """Fingerprint -> text of the vectors some index wants and nobody has yet."""
        self._stale = False
        """Whether a wanted text changed or went since `_take_pending` last dropped what nobody waits for."""
        self._claims: dict[bytes, int] = {}
        """Fingerprint -> how many searches wait for it (`claim`): kept pending even while no index wants it (a
        concurrent run moved the shared index to its own tools), so interleaved tenants cannot starve each other."""
        self._task: concurrent.futures.Future[None] | None = None
        """The embedding under way on `embedding_loop` (`wait_for_tools`), started by process `_task_pid`."""
        self._task_pid = 0
        self._key: str | None = None
        """The store key of the model whose vectors are held and attached (`switch_model`)."""
        self._memories: dict[str, tuple[dict[bytes, bytes], int | None, bool, int | None]] = {}
        """Store key -> (memory, dimensions, confirmed, expected) of the models not in use now (`switch_model`)."""
        self._runs: OrderedDict[str, int] = OrderedDict()
        """Run id -> `_tools_changed` when that run's first search waited (`wait_for_tools`)."""
        self._tools_changed = 0
        """Bumped when a followed index gains texts without a vector (a run's next search waits again)."""
        self._retry_at = 0.0
        self._warned: set[str] = set()
        self._queries: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        """(store key of the model, query) -> its vector, the most recent `QUERY_CACHE_SIZE`."""
        self._max_tokens: int | None = None
        self._asked_limit = False
        self._confirmed = False
        """Whether `dimensions` is the embedder's own (it produced a vector of that size in this process), not only
        the store's."""
        self._expected: int | None = None
        """The size of the first vector the embedder produced (what store vectors must have while none is held)."""
        self._unverified: dict[bytes, str] = {}
        """Fingerprint -> text of the store vectors taken before `_confirmed`: embedded again if they are stale."""
        self._generation = 0
        """Bumped when stale store vectors were dropped (`adopt_dimensions`), so a running fill tries them again."""
        self.usage = RequestUsage()
        """The embedder's usage for tool texts, summed (queries not included)."""
        self.embedded = 0
        self.cut = 0
        self.background = True
        """Whether a step starts embedding its new tools in the background (`wait_for_tools`); the CLI turns it
        off while it only looks at a surface (`toolproxy inspect`, or before `embed_surface` embeds it)."""

    # --- following the indexes (under `lock`) ---

    def _state(self, index: _core.SearchIndex) -> _IndexState:
        state = self._states.get(id(index))
        if state is None or state.index is not index:
            state = self._states[id(index)] = _IndexState(index)
        return state

    def current_key(self) -> str | None:
        """The store key of the model that embeds in the current context (`ResolvedEmbedder.store_key`), None when
        it cannot be resolved (a model name that does not resolve: the first embedder call says why)."""
        try:
            return self.embedder.store_key
        except Exception:
            return None

    def switch_model(self) -> bool:
        """Make the model that embeds in the current context the one whose vectors are held (call with `lock` held,
        before the search syncs its index). Returns True when it changed (an `Embedder.override` entered or left
        since the last search): the vectors held so far are set aside under their model's key, those known for this
        model are taken up, every followed index is forgotten (the caller resets its indexes, so the next sync
        re-indexes and re-attaches: no vector of another model stays attached) and the query vectors are this
        model's. A first search just records the model."""
        key = self.current_key()
        if key is None or key == self._key:
            return False
        if self._key is None:
            self._key = key
            return False
        self._memories[self._key] = (self.memory, self.dimensions, self._confirmed, self._expected)
        self.memory, self.dimensions, self._confirmed, self._expected = self._memories.pop(key, ({}, None, False, None))
        self._key = key
        self._unverified = {}
        self._states.clear()
        self._pending.clear()
        self._claims.clear()
        self._generation += 1
        self._tools_changed += 1
        self._retry_at = 0.0
        self._task = None  # the other model's embedding stores its batch in flight, then stops; this one starts anew
        return True

    def forget(self, index: _core.SearchIndex) -> None:
        """The cache dropped `index` (a reset or an evicted member set): stop following it."""
        state = self._states.get(id(index))
        if state is not None and state.index is index:
            del self._states[id(index)]

    def follow(self, index: _core.SearchIndex, upserts: Sequence[IndexRecord], removed: Sequence[str]) -> None:
        """`index` just upserted `upserts` and removed `removed`: attach the vectors known for their texts, drop a
        changed text's old vector, and queue the unknown texts for embedding. Call with `lock` held.

        The texts and fingerprints come from the core in one call (`_core.embedding_fingerprints`, the recipe of
        `_embedding_text`, byte-identical), so 100,000 upserted tools cost tens of milliseconds here."""
        state = self._state(index)
        wanted, attached = state.wanted, state.attached
        for key in removed:
            if wanted.pop(key, None) is not None:
                self._stale = True  # a waiting entry of this key may be left behind (`_take_pending`)
            attached.pop(key, None)  # the core dropped the vector with the record
        stale: list[str] = []
        keys: list[str] = []
        vectors: list[bytes] = []
        gained = False
        memory, pending, waiting = self.memory, self._pending, state.waiting
        texts, fingerprints = self._fingerprints(upserts)
        if not wanted and not attached and not waiting and self._follow_fresh(state, upserts, texts, fingerprints):
            if removed:
                self._prune()
            return
        for record, text, fingerprint in zip(upserts, texts, fingerprints, strict=True):
            key = record[0]
            before = wanted.get(key)
            wanted[key] = fingerprint
            if before is not None and before != fingerprint:
                self._stale = True
            was = attached.get(key)
            if was == fingerprint:
                continue
            if was is not None:
                stale.append(key)
                del attached[key]
            vector = memory.get(fingerprint)
            if vector is not None:
                keys.append(key)
                vectors.append(vector)
            else:
                if fingerprint not in pending:
                    pending[fingerprint] = text
                self._wait(state, fingerprint, key)
                gained = True
        if gained:
            self._tools_changed += 1
        if stale:
            index.drop_vectors(stale)
        if keys:
            self._set(state, keys, vectors)
        if stale or removed:
            self._prune()

    @staticmethod
    def _wait(state: _IndexState, fingerprint: bytes, key: str) -> None:
        """Note that `key` of `state`'s index waits for the pending vector of `fingerprint`."""
        waiter = state.waiting.get(fingerprint)
        if waiter is None:
            state.waiting[fingerprint] = key
        elif isinstance(waiter, str):
            if waiter != key:
                state.waiting[fingerprint] = [waiter, key]
        elif key not in waiter:
            waiter.append(key)

    def _follow_fresh(
        self, state: _IndexState, upserts: Sequence[IndexRecord], texts: list[str], fingerprints: list[bytes]
    ) -> bool:
        """`follow` of an index followed for the first time (a restart, a new tenant's index), in a few passes at C
        speed: what the loop of `follow` does when no key is wanted yet. False (nothing done) when two records
        share a key or a text, which the loop handles."""
        keys = [record[0] for record in upserts]
        wanted, waiting = state.wanted, state.waiting
        wanted.update(zip(keys, fingerprints, strict=True))
        if len(wanted) != len(keys):  # a key twice (both were empty before)
            wanted.clear()
            return False
        memory = self.memory
        known: list[str] = []
        vectors: list[bytes] = []
        if memory:
            hit = [fingerprint in memory for fingerprint in fingerprints]
            if any(hit):
                known = [key for key, h in zip(keys, hit, strict=True) if h]
                vectors = [memory[fp] for fp, h in zip(fingerprints, hit, strict=True) if h]
                keys = [key for key, h in zip(keys, hit, strict=True) if not h]
                texts = [text for text, h in zip(texts, hit, strict=True) if not h]
                fingerprints = [fp for fp, h in zip(fingerprints, hit, strict=True) if not h]
        waiting.update(zip(fingerprints, keys, strict=True))
        if len(waiting) != len(fingerprints):  # two keys share a text
            wanted.clear()
            waiting.clear()
            return False
        self._pending.update(zip(fingerprints, texts, strict=True))  # a text already pending: the same text
        if fingerprints:
            self._tools_changed += 1
        if known:
            self._set(state, known, vectors)
        return True

    def _fingerprints(self, upserts: Sequence[IndexRecord]) -> tuple[list[str], list[bytes]]:
        """The embedding text and its `text_hash` of each record, in order: from the core, and by the Python
        recipe for the records it leaves to it (a lone surrogate, a group without a known part)."""
        tails = self._tails
        texts, fingerprints = cast('tuple[list[str], list[bytes]]', _core.embedding_fingerprints(upserts, tails))
        if None in fingerprints:
            descriptions = self._descriptions
            for at, fingerprint in enumerate(fingerprints):
                if fingerprint is None:
                    _, group, local, description, _ = upserts[at]
                    if group not in tails:
                        tails[group] = group_text(group, descriptions.get(group, ''))
                    texts[at] = text = embedding_text(group, local, description, descriptions.get(group, ''))
                    fingerprints[at] = text_hash(text)
        return texts, fingerprints

    def _set(self, state: _IndexState, keys: list[str], vectors: list[bytes]) -> None:
        """Attach `vectors` to `keys` of `state.index` (one row each, `SearchIndex.set_vector_rows`: no joined
        buffer); a refusal of the core (ValueError: another dimensionality) is logged once and leaves those keys
        without a vector, so a search never fails for it."""
        assert self.dimensions is not None
        try:
            state.index.set_vector_rows(keys, vectors, self.dimensions)
        except ValueError as e:
            self._warn('attach', f'ToolProxy could not attach tool vectors ({e}); those tools rank by keywords.')
            return
        state.attached.update(zip(keys, map(state.wanted.__getitem__, keys), strict=True))

    def apply(self, found: Mapping[bytes, bytes], key: str | None = None) -> int:
        """Vectors `found` (fingerprint -> float32 bytes) of the model with store key `key` (None: the model in use)
        became known: keep them and attach them wherever they are wanted. Vectors of another model than the one in
        use (`switch_model` changed it meanwhile) are kept for that model only, never attached. Call with `lock`
        held. Returns how many index keys got a vector.

        Raises:
            ValueError: a vector's dimensionality differs from the vectors already held.
        """
        if key is not None and self._key is not None and key != self._key:
            kept = self._memories.get(key)
            if kept is not None and found:
                size = len(next(iter(found.values())))
                if kept[1] is None or kept[1] * 4 == size:
                    kept[0].update(found)
                    self._memories[key] = (kept[0], size // 4, kept[2], kept[3])
            return 0
        sizes = set(map(len, found.values()))
        if len(sizes) == 1 and (self.dimensions is None or sizes == {self.dimensions * 4}):
            self.dimensions = next(iter(sizes)) // 4
            self.memory.update(found)  # one dimensionality: nothing below can raise
        else:  # several sizes: keep (and attach) those before the first of another dimensionality, then raise
            before: dict[bytes, bytes] = {}
            for fingerprint, vector in found.items():
                dimensions = len(vector) // 4
                if self.dimensions is None:
                    self.dimensions = dimensions
                elif dimensions != self.dimensions:
                    self._apply(before)
                    raise ValueError(f'a vector has {dimensions} dimensions, the others {self.dimensions}')
                self.memory[fingerprint] = before[fingerprint] = vector
        return self._apply(found)

    def _apply(self, found: Mapping[bytes, bytes]) -> int:
        """`apply` once `found` is in `memory`: leave `_pending`, attach to the keys of the followed indexes
        waiting for them."""
        attached = 0
        pending = self._pending
        targets: list[
            tuple[_IndexState, dict[bytes, str | list[str]], dict[str, bytes], dict[str, bytes], list[str], list[bytes]]
        ] = [(state, state.waiting, state.wanted, state.attached, [], []) for state in self._states.values()]
        if len(pending) <= len(found) and pending.keys() <= found.keys():
            pending.clear()
        else:
            for fingerprint in found:
                pending.pop(fingerprint, None)
        for _, waiting, wanted, was, keys, vectors in targets:
            if not waiting:
                continue
            if len(waiting) <= len(found) and waiting.keys() <= found.keys():  # every waiting text arrived
                hits, waiters = list(waiting), list(waiting.values())  # in the order followed
                waiting.clear()
            else:
                hits = [fp for fp in found if fp in waiting]  # in the order found
                waiters = list(map(waiting.pop, hits))
            if set(map(type, waiters)) == {str}:  # one key per text (the usual case): filtered at C speed
                single = cast('list[str]', waiters)
                ready = list(map(operator.eq, map(wanted.get, single), hits))
                if was:
                    ready = list(map(operator.and_, ready, map(operator.ne, map(was.get, single), hits)))
                keys.extend(itertools.compress(single, ready))
                vectors.extend(map(found.__getitem__, itertools.compress(hits, ready)))
                continue
            for fingerprint, waiter in zip(hits, waiters, strict=True):
                for key in [waiter] if isinstance(waiter, str) else waiter:
                    if wanted.get(key) == fingerprint and was.get(key) != fingerprint:
                        keys.append(key)
                        vectors.append(found[fingerprint])
        for state, _, _, _, keys, vectors in targets:
            if keys:
                before = len(state.attached)
                self._set(state, keys, vectors)
                attached += len(state.attached) - before
        return attached

    def _prune(self) -> None:
        """Keep `memory` bounded when tool texts keep changing: past twice the wanted texts (plus `MEMORY_SLACK`),
        drop the vectors no followed index wants (the store still has them)."""
        states = self._states.values()
        if len(self.memory) <= 2 * sum(len(st.wanted) for st in states) + MEMORY_SLACK:
            return
        wanted = {fp for st in states for fp in st.wanted.values()}
        self.memory = {fp: v for fp, v in self.memory.items() if fp in wanted}

    def note_store(self, found: Mapping[bytes, bytes], texts: Mapping[bytes, str]) -> None:
        """`found` (a store's vectors of `texts`) was just applied: remember their texts while the embedder has not
        confirmed the dimensionality, to embed them again if it turns out another. Call with `lock` held."""
        if not self._confirmed:
            if found.keys() <= texts.keys():  # the usual call (a fill): at C speed, no tuple per vector
                self._unverified.update(zip(found, map(texts.__getitem__, found), strict=True))
            else:
                self._unverified.update((fp, texts[fp]) for fp in found if fp in texts)

    def adopt_dimensions(self, dimensions: int) -> bool:
        """The embedder just produced a vector of `dimensions` (a tool text's, or a query's). Call with `lock` held.

        The same size as the vectors held confirms them. Another, while every vector held came from the store (a
        cache filled by this model at another size, or damaged consistently), makes those stale: every index drops
        its vectors, memory forgets them, their texts are pending again (a search embeds them and the store's rows
        are replaced), one warning. Returns whether it did that. Another size while the embedder itself made the
        held vectors is left to the caller (`dimension_mismatch`: the model's queries and documents differ)."""
        if self._expected is None:
            self._expected = dimensions
        held = self.dimensions
        if held is None or dimensions == held:
            self._confirmed = True
            self._unverified = {}
            return False
        if self._confirmed:
            return False
        texts, self._unverified = self._unverified, {}
        self.memory = {}
        self.dimensions = None
        self._confirmed = True
        self._expected = dimensions
        for state in self._states.values():
            if state.attached:
                state.index.clear_vectors()
                state.attached.clear()
            for key, fingerprint in state.wanted.items():
                text = texts.get(fingerprint)
                if text is not None:
                    self._pending.setdefault(fingerprint, text)
                    self._wait(state, fingerprint, key)
        self._generation += 1
        self._tools_changed += 1
        self._retry_at = 0.0
        self._warn(
            'store-value',
            f'ToolProxy embedding cache holds vectors of {held} dimensions for {self.embedder.describe()}, which '
            f'embeds {dimensions}; embedding those tool texts again and replacing them.',
        )
        return True

    def adopt_query(self, vector: bytes) -> bool:
        """`adopt_dimensions` for a query's `vector` (takes `lock`): True when stale store vectors were dropped and
        the search should wait for the tools again."""
        with self.lock:
            return self.adopt_dimensions(len(vector) // 4)

    @property
    def pending(self) -> int:
        """Texts some index wants a vector for that is not known yet."""
        return len(self._pending)

    def coverage(self, index: _core.SearchIndex) -> tuple[int, int]:
        """`(tools with a vector, tools)` of `index` as followed."""
        state = self._states.get(id(index))
        if state is None or state.index is not index:
            return 0, 0
        return len(state.attached), len(state.wanted)

    # --- warnings ---

    def ranked(self, reason: str | None, with_vectors: int, tools: int) -> None:
        """Note one search's ranking: a search that fell back to keywords (`reason`, not an empty query) logs one
        warning per reason until a search ranks hybrid again, naming the reason and how many tools lack vectors,
        unless the cause was logged already (an embedder failure or timeout, a dimension change): the silent case is
        a cache that holds no vector of the texts this agent computes while the embedder is still at work."""
        if reason is None:
            for kind in _FALLBACK_REASONS:
                self._ok(f'fallback:{kind}')
            return
        why = _FALLBACK_REASONS.get(reason)
        if why is None:  # 'browse': an empty query is never ranked by meaning
            return
        if self._warned & {'embed', 'query-timeout', 'query-error', 'dimensions', 'store-value'}:
            return  # the cause was logged already, with what to do
        self._warn(
            f'fallback:{reason}',
            f'hybrid search ranked by keywords only ({reason}: {why}); {tools - with_vectors:,} of {tools:,} tools '
            'lack a vector. Logged once until a search ranks by meaning again.',
        )

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning(message)

    def _ok(self, kind: str) -> None:
        self._warned.discard(kind)

    # --- the store ---

    def store(self) -> EmbeddingStore | None:
        """The embedding store, opened on first use (an error opening it: memory only, one warning)."""
        if not self._store_opened:
            self._store_opened = True
            try:
                self._store = self._open_store()
            except Exception as e:
                self._warn('store', f'ToolProxy embedding cache unavailable, vectors stay in memory: {e!r}')
                self._store = None
            if self._store is not None and not self._named() and is_shared(self._store):
                self._store = None  # a shared store: keys must be unambiguous
                self.refused_store = True
                self._warn('unnamed', UNNAMED.format(model=self.embedder.describe(), name=self._model_name()))
        return self._store

    def _named(self) -> bool:
        try:
            return self.embedder.named
        except Exception:  # a model name that does not resolve: its store key fails later, as before (one warning)
            return True

    def _model_name(self) -> object:
        try:
            return self.embedder.embedder.model.model_name  # type: ignore[union-attr]
        except Exception:
            return None

    async def _store_call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` of the store in a worker thread, bounded by `embedding_timeout` (a slow database
        is one store error: the thread finishes by itself, a PostgreSQL statement at its `statement_timeout`).

        Raises:
            StoreTimeout: no answer in time; and whatever the method raises.
        """
        bound = self.config.embedding_timeout
        try:
            return await asyncio.wait_for(asyncio.to_thread(method, *args, **kwargs), bound)
        except TimeoutError:
            raise StoreTimeout(f'the store did not answer {method.__name__} within {bound:g} s') from None

    async def _store_get(
        self, fingerprints: list[bytes], key: str | None = None, present: set[bytes] | None = None
    ) -> dict[bytes, bytes]:
        """The store's vectors of `fingerprints` that are usable (`usable_vectors`); the others are embedded again
        (one warning). A store error: `{}` (one warning). Store calls run in a worker thread (`asyncio.to_thread`):
        a store may wait (a SQLite lock up to its busy timeout, a network database), never on the event loop.
        `present` gains every fingerprint the store returned a row for, usable or not."""
        store = self.store()
        if store is None or not fingerprints:
            return {}
        try:
            key = key or self.embedder.store_key
            found = await self._store_call(store.get_many, key, fingerprints)
            if present is not None:
                present.update(found)
            usable, dropped = usable_vectors(found, fingerprints, self.expected_dimensions())
        except Exception as e:
            self._warn('store', f'ToolProxy embedding cache read failed, embedding instead: {e!r}')
            return {}
        if dropped:
            self._warn(
                'store-value',
                f'ToolProxy embedding cache returned {dropped} unusable vector(s) (not float32 bytes of one '
                'dimensionality, or non-finite); embedding those tool texts again.',
            )
        return usable

    def expected_dimensions(self) -> int | None:
        """The size store vectors must have: the vectors held, else what the embedder produced or its settings
        declare (None: not known yet, the first usable store vector decides until the embedder tells)."""
        if self.dimensions is not None:
            return self.dimensions
        if self._expected is not None:
            return self._expected
        try:
            return self.embedder.declared_dimensions
        except Exception:
            return None

    async def _store_put(self, items: dict[bytes, bytes], key: str | None = None) -> None:
        """Write `items` to the store under `key`, the store key of the model that produced them (None: the model
        of the current context). A store error: one warning, the vectors stay in memory."""
        store = self.store()
        if store is None or not items:
            return
        try:
            key = key or self.embedder.store_key
            await self._store_call(store.put_many, key, items)
        except Exception as e:
            self._warn('store', f'ToolProxy embedding cache write failed, vectors stay in memory: {e!r}')

    # --- embedding tool texts ---

    async def _limit(self) -> int | None:
        """The model's `max_input_tokens` (asked once; an error or an answer that is no count: unknown).

        Raises:
            EmbedderTimeout: no answer within `embedding_timeout` (asked again at the next pass).
        """
        if not self._asked_limit:
            try:
                call = self.embedder.embedder.max_input_tokens()
                limit = await bounded(call, self.config.embedding_timeout, 'max_input_tokens')
            except EmbedderTimeout:
                raise
            except Exception:
                limit = None
            usable = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
            self._max_tokens = limit if usable else None  # a bool, a float or a non-positive count: unknown
            self._asked_limit = True
        return self._max_tokens

    async def _fit(self, text: str, limit: int | None) -> tuple[str, bool, int]:
        """`(text cut to `limit` tokens, whether it was cut, its estimated tokens)`."""
        size = len(text.encode('utf-8', 'surrogatepass'))
        if limit is None or size + 2 <= limit:  # a token is at least one byte, plus a model's two special tokens
            return text, False, size // 3 + 1
        count = await self._count(text)
        if count < limit:
            return text, False, count
        if count == limit:  # the tokenizer may have truncated by itself (sentence-transformers does)
            return text, True, count
        cut = text
        for _ in range(6):
            cut = cut[: max(1, int(len(cut) * limit / count * 0.95))]
            count = await self._count(cut)
            if count <= limit:
                break
        else:
            cut = cut[: max(1, limit)]
        return cut, True, min(count, limit)

    async def _count(self, text: str) -> int:
        """`text`'s tokens by the model's `count_tokens` (estimated when it cannot count).

        Raises:
            EmbedderTimeout: no answer within `embedding_timeout`.
        """
        try:
            call = self.embedder.embedder.count_tokens(text)
            return await bounded(call, self.config.embedding_timeout, 'count_tokens')
        except EmbedderTimeout:
            raise
        except Exception:  # NotImplementedError, UserError: this model cannot count; estimate (~3 bytes a token)
            return len(text.encode('utf-8', 'surrogatepass')) // 3 + 1

    async def embed_texts(
        self, texts: Mapping[bytes, str], counts: EmbedCounts, progress: Callable[[int], None] | None = None
    ) -> dict[bytes, bytes]:
        """Embed `texts` (fingerprint -> text) in batches of at most `BATCH_INPUTS` texts and `BATCH_TOKENS`
        estimated tokens, each text cut to the model's `max_input_tokens`. Each batch's vectors are attached (`apply`,
        taking `lock`) and stored as it arrives; counts go into `counts` (embedded, cut, usage). `progress(n)` after
        each batch of `n`. Returns the vectors embedded.

        A failed call (an error, or a malformed answer: wrong count, non-finite values) is split in halves and
        retried, so a text the provider refuses (one over a limit `max_input_tokens` did not tell) costs only its
        own vector; the pass goes on and raises that error at its end. `MAX_FAILED_CALLS` failures in a row (more
        than isolating one refused text takes) are an outage: the pass stops there. So is one call (`embed_documents`,
        `count_tokens`, `max_input_tokens`) past `embedding_timeout` (`EmbedderTimeout`, never split).

        Raises:
            Exception: the embedder's error, or ValueError for a malformed answer or another dimensionality; every
                vector embedded before (or, for refused texts, besides) it is kept.
        """
        limit = await self._limit()
        embedder = self.embedder.embedder
        key = self.current_key()  # the model that embeds here (the context's override, if any)
        out: dict[bytes, bytes] = {}
        batch: list[tuple[bytes, str]] = []
        tokens = 0
        failures = 0  # failed calls since the last one that answered
        refusal: list[Exception] = []

        async def send(items: list[tuple[bytes, str]]) -> None:
            nonlocal failures
            inputs = [t for _, t in items]
            try:
                call = embedder.embed_documents(inputs)
                what = f'embed_documents of {len(inputs)} text{"s" if len(inputs) != 1 else ""}'
                result = await bounded(call, self.config.embedding_timeout, what)
                if len(result.embeddings) != len(inputs):
                    raise ValueError(f'the embedder returned {len(result.embeddings)} vectors for {len(inputs)} texts')
                found = {fp: vector_bytes(v) for (fp, _), v in zip(items, result.embeddings, strict=True)}
            except EmbedderTimeout:
                raise  # a call that does not answer is an outage: halving would wait the bound once per half
            except Exception as e:
                failures += 1
                if failures >= MAX_FAILED_CALLS:
                    raise  # more failures in a row than halving a batch down to one refused text takes: an outage
                if len(items) == 1:
                    refusal.append(e)
                    return
                half = len(items) // 2
                await send(items[:half])
                await send(items[half:])
                return
            failures = 0
            counts.usage.incr(result.usage)
            self.usage.incr(result.usage)
            counts.embedded += len(found)
            self.embedded += len(found)
            with self.lock:
                if found and (self._key is None or key == self._key):
                    self.adopt_dimensions(len(next(iter(found.values()))) // 4)
                self.apply(found, key)
            await self._store_put(found, key)
            out.update(found)
            if progress is not None:
                progress(len(found))

        async def flush() -> None:
            nonlocal tokens
            if batch:
                await send(list(batch))
            batch.clear()
            tokens = 0

        for fingerprint, text in texts.items():
            fitted, was_cut, estimate = await self._fit(text, limit)
            if was_cut:
                counts.cut += 1
                self.cut += 1
            if batch and (len(batch) >= BATCH_INPUTS or tokens + estimate > BATCH_TOKENS):
                await flush()
            batch.append((fingerprint, fitted))
            tokens += estimate
        await flush()
        if refusal:
            raise refusal[0]
        return out

    async def _embed_claimed(self, texts: dict[bytes, str], key: str | None, present: set[bytes]) -> None:
        """Embed `texts` (none has a usable vector in the store) once for every process sharing the store: with a
        store that takes claims (`stores.supports_claims`), claim a batch, embed it, store it, release it; texts
        another process claimed are read from the store as they arrive (polled, `CLAIM_POLL` doubling up to
        `CLAIM_POLL_MAX` seconds). A text neither claimable nor stored for longer than a claim lasts (a claimer that
        hangs) is embedded here, and so is a text whose stored row this embedder cannot use (`present`: it cannot
        be claimed, its row is replaced). Other stores: embedded here at once."""
        store = self.store()
        if store is None or key is None or not supports_claims(store):
            await self.embed_texts(texts, EmbedCounts())
            return
        claiming = cast('ClaimingStore', store)
        seconds = 2 * self.config.embedding_timeout + CLAIM_SLACK
        left = dict(texts)
        unusable = {fp: left.pop(fp) for fp in present if fp in left}
        if unusable:
            await self.embed_texts(unusable, EmbedCounts())
        pause = CLAIM_POLL
        stalled_since = time.monotonic()
        while left:
            with self.lock:
                if self._key is not None and key != self._key:
                    return  # the model in use changed: its own fill embeds for it
            try:
                mine = await self._store_call(claiming.claim_many, key, list(left), limit=BATCH_INPUTS, seconds=seconds)
            except Exception as e:
                self._warn('store', f'ToolProxy embedding cache claims failed, embedding here: {e!r}')
                mine = list(left)
            if time.monotonic() - stalled_since > seconds:  # nobody delivers them: embed them here
                mine = list(left)
            if mine:
                todo = {fp: left.pop(fp) for fp in mine if fp in left}
                try:
                    await self.embed_texts(todo, EmbedCounts())
                finally:
                    with contextlib.suppress(Exception):
                        await self._store_call(claiming.release_many, key, mine)
                pause, stalled_since = CLAIM_POLL, time.monotonic()
                continue
            await asyncio.sleep(pause)
            pause = min(2 * pause, CLAIM_POLL_MAX)
            arrived: set[bytes] = set()
            found = await self._store_get(list(left), key, arrived)
            if found:
                with self.lock:
                    if self._key is None or key == self._key:
                        self.apply(found)
                        self.note_store(found, left)
                for fingerprint in found:
                    left.pop(fingerprint, None)
                stalled_since = time.monotonic()
            unusable = {fp: left.pop(fp) for fp in arrived if fp in left}
            if unusable:  # another process stored a vector this embedder cannot use: replace it
                await self.embed_texts(unusable, EmbedCounts())

    def claim(self, index: _core.SearchIndex) -> list[bytes]:
        """Mark the pending texts `index` wants as waited for by a search (see `_claims`) and return their
        fingerprints, for `release` once the search stops waiting. Call with `lock` held."""
        state = self._states.get(id(index))
        if state is None or state.index is not index:
            return []
        claimed = [fp for key, fp in state.wanted.items() if state.attached.get(key) != fp and fp in self._pending]
        for fingerprint in claimed:
            self._claims[fingerprint] = self._claims.get(fingerprint, 0) + 1
        return claimed

    def release(self, claimed: list[bytes]) -> None:
        """Undo `claim(...)`'s marks. Call with `lock` held."""
        for fingerprint in claimed:
            left = self._claims.get(fingerprint, 0) - 1
            if left > 0:
                self._claims[fingerprint] = left
            else:
                self._claims.pop(fingerprint, None)

    def _take_pending(self) -> dict[bytes, str]:
        """The pending texts some followed index still wants or a search waits for (the others are dropped). Call
        with `lock` held. Nothing to drop unless a wanted text changed or went since the last look (`_stale`)."""
        if not self._stale:
            return dict(self._pending)
        kept_claimed = False
        states = list(self._states.values())
        for fingerprint in list(self._pending):  # texts no index wants any more (changed again, or removed)
            if fingerprint in self._claims:
                kept_claimed = True  # looked at again next time: the claim may be gone by then
                continue
            wanted = False
            for state in states:
                waiter = state.waiting.get(fingerprint)
                if waiter is None:
                    continue
                keys = [
                    k for k in ([waiter] if isinstance(waiter, str) else waiter) if state.wanted.get(k) == fingerprint
                ]
                if not keys:
                    del state.waiting[fingerprint]
                    continue
                wanted = True
                state.waiting[fingerprint] = keys[0] if len(keys) == 1 else keys
            if not wanted:
                self._pending.pop(fingerprint, None)
        self._stale = kept_claimed
        return dict(self._pending)

    async def _fill(self) -> None:
        """Get a vector for every pending text: from the store, then the embedder, again for texts that became
        pending meanwhile (a later step's new tools). Errors (an embedder call past `embedding_timeout` too): logged
        once, retried `RETRY_SECONDS` later."""
        done: set[bytes] = set()
        generation = self._generation
        key = self.current_key()
        try:
            while True:
                with self.lock:
                    if key is not None and self._key is not None and key != self._key:
                        break  # the model in use changed: a search of the other model starts its own embedding
                    if generation != self._generation:  # stale store vectors were dropped: try their texts again
                        generation = self._generation
                        done.clear()
                    pending = self._take_pending()
                if done:
                    pending = {fp: t for fp, t in pending.items() if fp not in done}
                if not pending:
                    break
                done.update(pending)  # each text is tried once per fill, so a text the core refuses cannot loop
                present: set[bytes] = set()
                found = await self._store_get(list(pending), key, present)
                if found:
                    with self.lock:
                        if key is None or self._key is None or key == self._key:
                            self.apply(found)
                            self.note_store(found, pending)
                missing = {} if len(found) == len(pending) else {fp: t for fp, t in pending.items() if fp not in found}
                if missing:
                    await self._embed_claimed(missing, key, present)
            self._ok('embed')
        except Exception as e:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            self._warn(
                'embed',
                f'ToolProxy could not embed tool texts with {self.embedder.describe()} ({e!r}); tools without a '
                f'vector rank by keywords alone, retrying in {RETRY_SECONDS:g} s.',
            )

    async def wait_for_tools(self, wait: float, run_id: str | None = None) -> None:
        """Start (or join) embedding the pending texts on the process's embedding loop (`embedding_loop`) and wait
        for it up to `wait` seconds; it goes on past that, and past the end of this run and its event loop.

        Only a run's first search waits (and its first after the run's tools gained texts without a vector): a
        later search of run `run_id` starts or joins the embedding without waiting, and ranks what has a vector.
        Without a `run_id` every call waits. The embedding runs in a copy of this call's context (an
        `Embedder.override` active here is the model that embeds); one embedding at a time per surface, joined by
        every search of every thread and loop, so each text is embedded once."""
        if run_id is not None:
            with self.lock:
                if self._runs.get(run_id) == self._tools_changed:
                    wait = 0.0
                else:
                    self._runs[run_id] = self._tools_changed
                    self._runs.move_to_end(run_id)
                    while len(self._runs) > MAX_RUNS_REMEMBERED:
                        self._runs.popitem(last=False)
        if not self._pending or not self.background:
            return
        deadline = time.monotonic() + wait
        with self.lock:  # one search starts the embedding; the others join it
            task = self._task
            if task is not None and (task.done() or self._task_pid != os.getpid()):  # a fork's copy never ends
                task = self._task = None
            if task is None:
                if not self._pending or time.monotonic() < self._retry_at:
                    return
                # The callback scheduling the task copies this thread's context: the fill sees this search's
                # context (an Embedder.override, for one).
                task = self._task = asyncio.run_coroutine_threadsafe(self._fill(), embedding_loop())
                self._task_pid = os.getpid()
        left = deadline - time.monotonic()
        if left <= 0 or task.done():
            return
        with contextlib.suppress(Exception):  # past the wait the fill goes on; it logs its own errors
            await asyncio.wait_for(joined(task), left)

    # --- the query side ---

    async def query_vector(self, query: str) -> tuple[bytes | None, str | None]:
        """`(float32 vector of query, None)`, or `(None, reason)`: `'browse'` (empty query), `'query-timeout'`,
        `'embedder-error'` (each logged once until a query succeeds again). Recent vectors come from a bounded
        cache (`QUERY_CACHE_SIZE`)."""
        if not query.strip():
            return None, 'browse'
        model = self.current_key() or ''
        cached = self._queries.get((model, query))
        if cached is not None:
            self._queries.move_to_end((model, query))
            return cached, None
        try:
            call = bounded(self.embedder.embedder.embed_query(query), self.config.query_timeout, 'embed_query')
            # On the embedding loop too: every embedder call of the process runs on one loop (a provider's HTTP
            # connections belong to the loop that opened them), in a copy of this search's context.
            result = await joined(asyncio.run_coroutine_threadsafe(call, embedding_loop()))
            if len(result.embeddings) != 1:
                raise ValueError(f'the embedder returned {len(result.embeddings)} vectors for one query')
            vector = vector_bytes(result.embeddings[0])
        except TimeoutError:
            self._warn(
                'query-timeout',
                f'ToolProxy query embedding with {self.embedder.describe()} took longer than '
                f'{self.config.query_timeout:g} s; searching by keywords alone until it answers in time.',
            )
            return None, 'query-timeout'
        except Exception as e:
            self._warn(
                'query-error',
                f'ToolProxy query embedding with {self.embedder.describe()} failed ({e!r}); searching by keywords '
                'alone until it works.',
            )
            return None, 'embedder-error'
        self._ok('query-timeout')
        self._ok('query-error')
        self._queries[(model, query)] = vector
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return vector, None

    def dimension_mismatch(self, dimensions: int) -> None:
        """Log (once) that a query vector has `dimensions` while the tool vectors this embedder made have
        `self.dimensions` (a model whose queries and documents differ in size; stale store vectors are replaced
        instead, `adopt_dimensions`)."""
        self._warn(
            'dimensions',
            f'ToolProxy query vectors of {self.embedder.describe()} have {dimensions} dimensions, the tool vectors '
            f'it embedded {self.dimensions}; searching by keywords alone.',
        )

    def cached_query_vector(self, query: str) -> bytes | None:
        """The query's vector by the model of the current context if a recent search embedded it (no embedder
        call), else None."""
        return self._queries.get((self.current_key() or '', query))


def surface_texts(capability: ProxySurface, tools: Mapping[str, ToolsetTool[Any]]) -> dict[bytes, str]:
    """The embedding texts of `capability`'s grouped tools among `tools` (a step's prepared tools), by text hash:
    what `embed_surface` embeds, and what `toolproxy inspect` looks up in the store."""
    from ._directory import index_record

    descriptions = {name: group.description for name, group in capability.groups.items()}
    texts: dict[bytes, str] = {}
    for name, tool in capability.directory_of(tools).tools.items():
        group: str = tool.toolset.group  # type: ignore[attr-defined]
        _, _, local, description, _ = index_record(name, group, tool.tool_def.description, None)
        text = embedding_text(group, local, description, descriptions.get(group, ''))
        texts.setdefault(text_hash(text), text)
    return texts


async def embed_surface(
    capability: ProxySurface,
    tools: Mapping[str, ToolsetTool[Any]],
    progress: Callable[[int, int], None] | None = None,
) -> EmbedCounts:
    """Embed every grouped tool of `capability`'s surface among `tools` (a step's prepared tools, e.g. from a
    probe run) now: what the store already holds is counted as cached, the rest goes to the embedder and into
    the store. `progress(done, total)` is called after the store lookup and after each batch.

    An embedder error (an embedder call past `embedding_timeout` too) stops the pass: the texts left count as
    `failed` and `error` says why (the vectors of the batches before it are kept and stored); a search of the
    surface asks the embedder for them again `RETRY_SECONDS` later. Cached vectors of another dimensionality
    than the embedder's fresh ones are embedded again too (`ToolVectors.adopt_dimensions`: not counted as cached).

    Raises:
        ValueError: the capability's config has no embedder.
    """
    vectors = capability.tool_vectors
    if vectors is None:
        raise ValueError('ToolProxyConfig.embedder is None: there is nothing to embed with.')
    started = time.perf_counter()
    texts = surface_texts(capability, tools)
    counts = EmbedCounts(tools=len(texts))
    known = {fp: vectors.memory[fp] for fp in texts if fp in vectors.memory}
    missing = [fp for fp in texts if fp not in known]
    stored = await vectors._store_get(missing)
    known.update(stored)
    if known:
        with vectors.lock:
            vectors.apply(known)
            vectors.note_store(stored, texts)
    generation = vectors._generation
    counts.cached = len(known)
    done = len(known)
    if progress is not None:
        progress(done, len(texts))

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, len(texts))

    todo = {fp: text for fp, text in texts.items() if fp not in known}
    try:
        await vectors.embed_texts(todo, counts, step)
        if vectors._generation != generation:  # the cache's vectors were of another size: replace them too
            stale = {fp: texts[fp] for fp in known if fp not in vectors.memory}
            counts.cached -= len(stale)
            done -= len(stale)
            await vectors.embed_texts(stale, counts, step)
    except Exception as e:
        counts.error = repr(e)[:500]
        vectors._retry_at = time.monotonic() + RETRY_SECONDS  # a search right after does not ask again at once
    counts.failed = len(texts) - counts.cached - counts.embedded
    counts.seconds = time.perf_counter() - started
    return counts
