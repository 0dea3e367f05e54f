"""`VectorHolder`: what the collaborators of `vectors.ToolVectors` (`fill`, `batches`, `queries`) use of it, so
that they depend on this shape, not on the class that holds them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic_ai.usage import RequestUsage

    from .. import _core
    from ..config import ToolProxyConfig
    from .dimensions import DimensionPolicy
    from .embedder import ResolvedEmbedder
    from .store_io import StoreIO
    from .warnings import LogOnce

__all__ = ('VectorHolder',)


class VectorHolder(Protocol):
    """The tool vectors of one surface as their collaborators see them (`ToolVectors` is the one implementation)."""

    config: ToolProxyConfig
    embedder: ResolvedEmbedder
    lock: Any
    """The index cache's lock: `apply`, `take_pending`, `missing` and the dimension policy's `note_store` and
    `adopt_dimensions` need it held."""
    log: LogOnce
    dimension_policy: DimensionPolicy
    stores: StoreIO
    held_key: str | None
    """The store key of the model whose vectors are held and attached."""
    generation: int
    """Bumped when stale store vectors were dropped."""
    tools_changed: int
    """Bumped when a followed index gains texts without a vector."""
    background: bool
    usage: RequestUsage
    embedded: int
    cut: int

    @property
    def pending(self) -> int:
        """Texts some index wants a vector for that is not known yet."""
        ...

    def missing_share(self) -> float:
        """The share of the texts the followed indexes want that has no vector yet (0 to 1)."""
        ...

    def current_key(self) -> str | None:
        """The store key of the model that embeds in the current context, None when it cannot be resolved."""
        ...

    def apply(self, found: Mapping[bytes, bytes], key: str | None = None) -> int:
        """Keep vectors `found` of the model `key` and attach them where they are wanted."""
        ...

    def take_pending(self, claims: Mapping[bytes, int]) -> dict[bytes, str]:
        """The pending texts some followed index still wants or a search waits for."""
        ...

    def missing(self, index: _core.SearchIndex) -> list[bytes]:
        """The fingerprints of the pending texts `index` wants."""
        ...
