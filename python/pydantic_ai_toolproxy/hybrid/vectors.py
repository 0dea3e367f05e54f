"""`ToolVectors`: the tool vectors of one proxy surface, following every `_core.SearchIndex` the surface searches.

Each upserted tool's embedding text (`hybrid.embedding_text`) is fingerprinted; a vector already known (this process's
memory, then the `EmbeddingStore`) is attached at once with `SearchIndex.set_vector_rows`; the others are pending,
embedded in the background (`fill.Fill`) in batches (`batches.TextBatches`), and attached when they arrive. A tool
whose text changes loses its vector until the new one is known; a removed tool's vector goes with its record.

Vectors are keyed by the model that produced them (`ResolvedEmbedder.store_key` in the context of the call that
embedded them: the override's model under `Embedder.override`): in memory, in the store, and the query vectors. A
search whose model differs from the one the held vectors came from (an override entered or left) switches: the
indexes drop every vector and are rebuilt with the vectors known for that model (`switch_model`).

The embedder decides the dimensionality: store vectors are taken on trust until the embedder produces a vector
(a tool's, or a query's); one of another size makes every store vector taken so far stale
(`dimensions.DimensionPolicy`): they are dropped (`drop_stale`), embedded again and replaced in the store, with one
warning. A model without a name of its own
(`ResolvedEmbedder.named`) never uses a shared store (one warning saying how to name it).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from pydantic_ai.usage import RequestUsage

from .. import _core
from .batches import EmbedCounts, TextBatches
from .dimensions import DimensionPolicy
from .embedder import ResolvedEmbedder
from .embedding_text import embedding_text, group_text, text_hash
from .fill import Fill
from .queries import QueryVectors
from .store_io import StoreIO
from .warnings import LogOnce

if TYPE_CHECKING:
    from ..config import ToolProxyConfig
    from ..grouping.directory import IndexRecord
    from ..stores.protocol import EmbeddingStore

__all__ = ('MEMORY_SLACK', 'ToolVectors')

MEMORY_SLACK = 1024
"""Vectors kept in memory beyond twice the texts the followed indexes want, before unwanted ones are dropped."""


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

    def wait(self, fingerprint: bytes, key: str) -> None:
        """Note that `key` waits for the pending vector of `fingerprint`."""
        waiter = self.waiting.get(fingerprint)
        if waiter is None:
            self.waiting[fingerprint] = key
        elif isinstance(waiter, str):
            if waiter != key:
                self.waiting[fingerprint] = [waiter, key]
        elif key not in waiter:
            waiter.append(key)

    def follow_fresh(
        self, upserts: Sequence[IndexRecord], texts: list[str], fingerprints: list[bytes], memory: Mapping[bytes, bytes]
    ) -> tuple[list[str], list[bytes], list[bytes], list[str]] | None:
        """`ToolVectors.follow` of an index followed for the first time (a restart, a new tenant's index), in a few
        passes at C speed: `(keys known in memory, their vectors, fingerprints now waited for, their texts)`. None
        (nothing done) when two records share a key or a text, which the loop of `follow` handles."""
        keys = [record[0] for record in upserts]
        wanted, waiting = self.wanted, self.waiting
        wanted.update(zip(keys, fingerprints, strict=True))
        if len(wanted) != len(keys):  # a key twice (both were empty before)
            wanted.clear()
            return None
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
            return None
        return known, vectors, fingerprints, texts

    def still_wants(self, fingerprint: bytes) -> bool:
        """Whether a key of this index still waits for `fingerprint` (a waiting entry whose key wants another text
        now is dropped)."""
        waiter = self.waiting.get(fingerprint)
        if waiter is None:
            return False
        keys = [k for k in ([waiter] if isinstance(waiter, str) else waiter) if self.wanted.get(k) == fingerprint]
        if not keys:
            del self.waiting[fingerprint]
            return False
        self.waiting[fingerprint] = keys[0] if len(keys) == 1 else keys
        return True


def _fingerprints(
    upserts: Sequence[IndexRecord], tails: dict[str, str], descriptions: Mapping[str, str]
) -> tuple[list[str], list[bytes]]:
    """The embedding text and its `text_hash` of each record, in order: from the core, and by the Python recipe
    for the records it leaves to it (a lone surrogate, a group without a known part, which joins `tails`)."""
    texts, fingerprints = cast('tuple[list[str], list[bytes]]', _core.embedding_fingerprints(upserts, tails))
    if None in fingerprints:
        for at, fingerprint in enumerate(fingerprints):
            if fingerprint is None:
                _, group, local, description, _ = upserts[at]
                if group not in tails:
                    tails[group] = group_text(group, descriptions.get(group, ''))
                texts[at] = text = embedding_text(group, local, description, descriptions.get(group, ''))
                fingerprints[at] = text_hash(text)
    return texts, fingerprints


class ToolVectors:
    """Tool and query vectors of one proxy surface (see the module docstring): which index keys want which text,
    what is attached, what is pending; the dimension policy (`dimension_policy`), the store (`stores`), batches
    (`batches`), the background fill (`fill`), query vectors (`queries`) and log-once warnings (`log`) are its
    collaborators.

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
        self.log = LogOnce()
        self.dimensions: int | None = None
        """Float32 values per vector of the vectors held (None: none held)."""
        self.dimension_policy = DimensionPolicy(self.embedder, self.log, lock, lambda: self.dimensions, self.drop_stale)
        self.stores = StoreIO(config, self.embedder, self.log, open_store, self.dimension_policy.expected_dimensions)
        self.batches = TextBatches(self)
        self.fill = Fill(self, self.batches)
        self.queries = QueryVectors(self)
        self.memory: dict[bytes, bytes] = {}
        """Text fingerprint -> little-endian float32 vector, every vector this process has seen."""
        self._states: dict[int, _IndexState] = {}
        self._pending: dict[bytes, str] = {}
        """Fingerprint -> text of the vectors some index wants and nobody has yet."""
        self._stale = False
        """Whether a wanted text changed or went since `take_pending` last dropped what nobody waits for."""
        self.held_key: str | None = None
        """The store key of the model whose vectors are held and attached (`switch_model`)."""
        self._memories: dict[str, tuple[dict[bytes, bytes], int | None, bool, int | None]] = {}
        """Store key -> (memory, dimensions, confirmed, expected) of the models not in use now (`switch_model`)."""
        self.tools_changed = 0
        """Bumped when a followed index gains texts without a vector (a run's next search waits again)."""
        self.generation = 0
        """Bumped when stale store vectors were dropped (`drop_stale`), so a running fill tries them again."""
        self.usage = RequestUsage()
        """The embedder's usage for tool texts, summed (queries not included)."""
        self.embedded = 0
        self.cut = 0
        self.background = True
        """Whether a step starts embedding its new tools in the background (`wait_for_tools`); the CLI turns it
        off while it only looks at a surface (`toolproxy inspect`, or before `embed_surface` embeds it)."""

    # --- following the indexes (under `lock`) ---

    def redescribe(self, group: str, description: str) -> None:
        """Embed the tools of `group` with `description` from now on (the index cache resets its slots, whose next
        sync upserts every member again with the new texts). Call with `lock` held."""
        self._descriptions[group] = description
        self._tails[group] = group_text(group, description)

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
        if key is None or key == self.held_key:
            return False
        if self.held_key is None:
            self.held_key = key
            return False
        policy = self.dimension_policy
        self._memories[self.held_key] = (self.memory, self.dimensions, policy.confirmed, policy.expected)
        self.memory, self.dimensions, policy.confirmed, policy.expected = self._memories.pop(
            key, ({}, None, False, None)
        )
        self.held_key = key
        policy.unverified = {}
        self._states.clear()
        self._pending.clear()
        self.generation += 1
        self.tools_changed += 1
        self.fill.restart()
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
        `hybrid.embedding_text`, byte-identical)."""
        state = self._state(index)
        wanted, attached = state.wanted, state.attached
        for key in removed:
            if wanted.pop(key, None) is not None:
                self._stale = True  # a waiting entry of this key may be left behind (`take_pending`)
            attached.pop(key, None)  # the core dropped the vector with the record
        stale: list[str] = []
        keys: list[str] = []
        vectors: list[bytes] = []
        gained = False
        memory, pending = self.memory, self._pending
        texts, fingerprints = _fingerprints(upserts, self._tails, self._descriptions)
        if (
            not wanted
            and not attached
            and not state.waiting
            and self._follow_fresh(state, upserts, texts, fingerprints)
        ):
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
                state.wait(fingerprint, key)
                gained = True
        if gained:
            self.tools_changed += 1
        if stale:
            index.drop_vectors(stale)
        if keys:
            self._set(state, keys, vectors)
        if stale or removed:
            self._prune()

    def _follow_fresh(
        self, state: _IndexState, upserts: Sequence[IndexRecord], texts: list[str], fingerprints: list[bytes]
    ) -> bool:
        """`follow` of an index followed for the first time (`_IndexState.follow_fresh`); False (nothing done) when
        two records share a key or a text."""
        fresh = state.follow_fresh(upserts, texts, fingerprints, self.memory)
        if fresh is None:
            return False
        known, vectors, waited, waited_texts = fresh
        self._pending.update(zip(waited, waited_texts, strict=True))  # a text already pending: the same text
        if waited:
            self.tools_changed += 1
        if known:
            self._set(state, known, vectors)
        return True

    def _set(self, state: _IndexState, keys: list[str], vectors: list[bytes]) -> None:
        """Attach `vectors` to `keys` of `state.index` (one row each, `SearchIndex.set_vector_rows`: no joined
        buffer); a refusal of the core (ValueError: another dimensionality) is logged once and leaves those keys
        without a vector, so a search never fails for it."""
        assert self.dimensions is not None
        try:
            state.index.set_vector_rows(keys, vectors, self.dimensions)
        except ValueError as e:
            self.log.warn('attach', f'ToolProxy could not attach tool vectors ({e}); those tools rank by keywords.')
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
        if key is not None and self.held_key is not None and key != self.held_key:
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
        pending = self._pending
        if len(pending) <= len(found) and pending.keys() <= found.keys():
            pending.clear()
        else:
            for fingerprint in found:
                pending.pop(fingerprint, None)
        ready = [(state, *_arrived(state, found)) for state in self._states.values() if state.waiting]
        attached = 0
        for state, keys, vectors in ready:
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

    def missing(self, index: _core.SearchIndex) -> list[bytes]:
        """The fingerprints of the pending texts `index` wants (without a vector attached). Call with `lock` held."""
        state = self._states.get(id(index))
        if state is None or state.index is not index:
            return []
        pending = self._pending
        return [fp for key, fp in state.wanted.items() if state.attached.get(key) != fp and fp in pending]

    def take_pending(self, claims: Mapping[bytes, int]) -> dict[bytes, str]:
        """The pending texts some followed index still wants or a search waits for (`claims`); the others are
        dropped. Call with `lock` held. Nothing to drop unless a wanted text changed or went since the last look."""
        if not self._stale:
            return dict(self._pending)
        kept_claimed = False
        states = list(self._states.values())
        for fingerprint in list(self._pending):  # texts no index wants any more (changed again, or removed)
            if fingerprint in claims:
                kept_claimed = True  # looked at again next time: the claim may be gone by then
                continue
            wanted = False
            for state in states:  # every state looks (each drops its waiting entries that went stale)
                wanted = state.still_wants(fingerprint) or wanted
            if not wanted:
                self._pending.pop(fingerprint, None)
        self._stale = kept_claimed
        return dict(self._pending)

    def drop_stale(self, texts: Mapping[bytes, str]) -> None:
        """Drop every vector held, the store's of another size than the embedder's (`DimensionPolicy`): every index
        drops its vectors, memory forgets them, and the wanted ones of `texts` (fingerprint -> text) are pending
        again. Call with `lock` held."""
        self.memory = {}
        self.dimensions = None
        for state in self._states.values():
            if state.attached:
                state.index.clear_vectors()
                state.attached.clear()
            for key, fingerprint in state.wanted.items():
                text = texts.get(fingerprint)
                if text is not None:
                    self._pending.setdefault(fingerprint, text)
                    state.wait(fingerprint, key)
        self.generation += 1
        self.tools_changed += 1
        self.fill.retry_now()

    # --- what the searches and the CLI ask ---

    @property
    def pending(self) -> int:
        """Texts some index wants a vector for that is not known yet."""
        return len(self._pending)

    def missing_share(self) -> float:
        """The share of the texts the followed indexes want that has no vector yet (pending / wanted, 0 to 1; 0
        when nothing is followed). Takes `lock`."""
        with self.lock:
            pending = len(self._pending)
            if not pending:
                return 0.0
            wanted = sum(len(state.wanted) for state in self._states.values())
            return pending / max(pending, wanted)

    def coverage(self, index: _core.SearchIndex) -> tuple[int, int]:
        """`(tools with a vector, tools)` of `index` as followed."""
        state = self._states.get(id(index))
        if state is None or state.index is not index:
            return 0, 0
        return len(state.attached), len(state.wanted)

    async def embed_texts(
        self, texts: Mapping[bytes, str], counts: EmbedCounts, progress: Callable[[int], None] | None = None
    ) -> dict[bytes, bytes]:
        """Embed `texts` now, in batches, attaching and storing each batch (`TextBatches.embed_texts`)."""
        return await self.batches.embed_texts(texts, counts, progress)

    async def wait_for_tools(self, wait: float, run_id: str | None = None) -> None:
        """Start or join the background fill and wait for it up to `wait` seconds (`Fill.wait_for_tools`)."""
        await self.fill.wait_for_tools(wait, run_id)

    async def query_vector(self, query: str) -> tuple[bytes | None, str | None]:
        """The query's vector, or `(None, reason)` (`QueryVectors.vector`)."""
        return await self.queries.vector(query)

    def cached_query_vector(self, query: str) -> bytes | None:
        """The query's vector if a recent search embedded it (`QueryVectors.cached`), else None."""
        return self.queries.cached(query)


def _arrived(state: _IndexState, found: Mapping[bytes, bytes]) -> tuple[list[str], list[bytes]]:
    """`(keys, vectors)` of `state`'s index to attach now that `found` is known: the keys that waited for those
    texts and still want them (not attached already); they leave `state.waiting`."""
    waiting, wanted, was = state.waiting, state.wanted, state.attached
    keys: list[str] = []
    vectors: list[bytes] = []
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
        return keys, vectors
    for fingerprint, waiter in zip(hits, waiters, strict=True):
        for key in [waiter] if isinstance(waiter, str) else waiter:
            if wanted.get(key) == fingerprint and was.get(key) != fingerprint:
                keys.append(key)
                vectors.append(found[fingerprint])
    return keys, vectors
