"""`DimensionPolicy`: which vector size the tool vectors of one surface (`vectors.ToolVectors`) hold, and what
happens when the embedder disagrees with the store.

The embedder decides the dimensionality: store vectors are taken on trust until the embedder produces a vector
(a tool's, or a query's); one of another size makes every store vector taken so far stale (`adopt_dimensions`):
they are dropped, embedded again and replaced in the store, with one warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embedder import ResolvedEmbedder
    from .warnings import LogOnce

__all__ = ('DimensionPolicy',)


class DimensionPolicy:
    """The dimension policy of one `ToolVectors`: whether the size of the vectors it holds is the embedder's own
    (`confirmed`), the size store vectors must have (`expected_dimensions`), and which store vectors to embed again
    when the embedder turns out to produce another size (`unverified`).

    Args:
        embedder: The embedder whose vectors are held (named in the warnings).
        log: The log-once warnings of the surface.
        lock: The index cache's lock (`adopt_query` takes it; the other calls run with it held).
        held: The size of the vectors held now (`ToolVectors.dimensions`, float32 values per vector), None when none.
        drop: Drops every vector held and makes the given texts (fingerprint -> text) pending again
            (`ToolVectors.drop_stale`).
    """

    def __init__(
        self,
        embedder: ResolvedEmbedder,
        log: LogOnce,
        lock: Any,
        held: Callable[[], int | None],
        drop: Callable[[Mapping[bytes, str]], None],
    ) -> None:
        self.embedder = embedder
        self.log = log
        self.lock = lock
        self._held = held
        self._drop = drop
        self.confirmed = False
        """Whether the size held is the embedder's own (it produced a vector of that size in this process), not only
        the store's."""
        self.expected: int | None = None
        """The size of the first vector the embedder produced (what store vectors must have while none is held)."""
        self.unverified: dict[bytes, str] = {}
        """Fingerprint -> text of the store vectors taken before `confirmed`: embedded again if they are stale."""

    def note_store(self, found: Mapping[bytes, bytes], texts: Mapping[bytes, str]) -> None:
        """`found` (a store's vectors of `texts`) was just applied: remember their texts while the embedder has not
        confirmed the dimensionality, to embed them again if it turns out another. Call with `lock` held."""
        if not self.confirmed:
            if found.keys() <= texts.keys():  # the usual call (a fill): at C speed, no tuple per vector
                self.unverified.update(zip(found, map(texts.__getitem__, found), strict=True))
            else:
                self.unverified.update((fp, texts[fp]) for fp in found if fp in texts)

    def adopt_dimensions(self, dimensions: int) -> bool:
        """The embedder just produced a vector of `dimensions` (a tool text's, or a query's). Call with `lock` held.

        The same size as the vectors held confirms them. Another, while every vector held came from the store (a
        cache filled by this model at another size, or damaged consistently), makes those stale: every index drops
        its vectors, memory forgets them, their texts are pending again (a search embeds them and the store's rows
        are replaced), one warning. Returns whether it did that. Another size while the embedder itself made the
        held vectors is left to the caller (`dimension_mismatch`: the model's queries and documents differ)."""
        if self.expected is None:
            self.expected = dimensions
        held = self._held()
        if held is None or dimensions == held:
            self.confirmed = True
            self.unverified = {}
            return False
        if self.confirmed:
            return False
        texts, self.unverified = self.unverified, {}
        self.confirmed = True
        self.expected = dimensions
        self._drop(texts)
        self.log.warn(
            'store-value',
            f'ToolProxy embedding cache holds vectors of {held} dimensions for {self.embedder.describe()}, which '
            f'embeds {dimensions}; embedding those tool texts again and replacing them.',
        )
        return True

    def adopt_query(self, vector: bytes) -> bool:
        """`adopt_dimensions` for a query's `vector` (little-endian float32 bytes; takes `lock`): True when stale
        store vectors were dropped and the search should wait for the tools again."""
        with self.lock:
            return self.adopt_dimensions(len(vector) // 4)

    def expected_dimensions(self) -> int | None:
        """The size store vectors must have: the vectors held, else what the embedder produced or its settings
        declare (None: not known yet, the first usable store vector decides until the embedder tells)."""
        held = self._held()
        if held is not None:
            return held
        if self.expected is not None:
            return self.expected
        try:
            return self.embedder.declared_dimensions
        except Exception:
            return None

    def dimension_mismatch(self, dimensions: int) -> None:
        """Log (once) that a query vector has `dimensions` while the tool vectors this embedder made have another
        size (a model whose queries and documents differ in size; stale store vectors are replaced instead,
        `adopt_dimensions`)."""
        self.log.warn(
            'dimensions',
            f'ToolProxy query vectors of {self.embedder.describe()} have {dimensions} dimensions, the tool vectors '
            f'it embedded {self._held()}; searching by keywords alone.',
        )
