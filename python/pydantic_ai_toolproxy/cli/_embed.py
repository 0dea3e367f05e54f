"""The CLI's embedding of a surface: its tools' embedding texts (`surface_texts`) and one pass that embeds every
text the store does not hold yet (`embed_surface`, for `toolproxy embed` and `toolproxy search`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..grouping.directory import index_record
from ..hybrid.batches import EmbedCounts
from ..hybrid.embedding_text import embedding_text, text_hash

if TYPE_CHECKING:
    from pydantic_ai.toolsets.abstract import ToolsetTool

    from ..grouping.directory import Directory
    from ..hybrid.vectors import ToolVectors

__all__ = ('ProxySurface', 'embed_surface', 'surface_texts')


class ProxySurface(Protocol):
    """What `embed_surface` and `surface_texts` need of a `ToolProxyCapability` (typed by shape)."""

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


def surface_texts(capability: ProxySurface, tools: Mapping[str, ToolsetTool[Any]]) -> dict[bytes, str]:
    """The embedding texts of `capability`'s grouped tools among `tools` (a step's prepared tools), by text hash:
    what `embed_surface` embeds, and what `toolproxy inspect` looks up in the store."""
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
    surface asks the embedder for them again `hybrid.fill.RETRY_SECONDS` later. Cached vectors of another
    dimensionality than the embedder's fresh ones are embedded again too (`DimensionPolicy.adopt_dimensions`: not
    counted as cached).

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
    stored = await vectors.stores.get(missing)
    known.update(stored)
    if known:
        with vectors.lock:
            vectors.apply(known)
            vectors.dimension_policy.note_store(stored, texts)
    generation = vectors.generation
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
        if vectors.generation != generation:  # the cache's vectors were of another size: replace them too
            stale = {fp: texts[fp] for fp in known if fp not in vectors.memory}
            counts.cached -= len(stale)
            done -= len(stale)
            await vectors.embed_texts(stale, counts, step)
    except Exception as e:
        counts.error = repr(e)[:500]
        vectors.fill.retry_later()  # a search right after does not ask again at once
    counts.failed = len(texts) - counts.cached - counts.embedded
    counts.seconds = time.perf_counter() - started
    return counts
