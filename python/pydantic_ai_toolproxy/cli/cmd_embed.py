"""`toolproxy embed`: embed every grouped tool now and fill the embedding cache, so no run pays for it later.

One real agent run over the sources under the `ToolProxyCapability` (background embedding off) gives the step's
grouped tools; `cli._embed.embed_surface` then looks each tool text up in the cache and embeds the rest with the
configured embedder, in batches within its limits, writing every batch to the cache as it arrives. The same
texts, hashes and cache key as a real run's, so the next run (or worker process, or `toolproxy search`) finds them.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ._embed import embed_surface
from ._hybrid import cache_info, describe_cache, quiet_vectors
from ._probe import probe
from ._progress import Progress
from ._render import Output, num, plural
from ._sources import SourceError, Surface

__all__ = ('run_embed',)

NO_EMBEDDER = (
    'toolproxy embed needs an embedder: --embedder MODEL before the command (a model name such as '
    'openai:text-embedding-3-small, or module:attr of an EmbeddingModel), or embedder = "..." in the config '
    "file's [discovery]"
)


TIMEOUT_HINT = (
    " (raise --embedding-timeout, or embedding_timeout in the config file's [discovery], if the embedder is only slow)"
)


def usage_fields(usage: Any) -> dict[str, Any]:
    """The embedder usage's non-zero fields (`input_tokens`, `cost`, ...), as JSON values."""
    return {k: v for k, v in asdict(usage).items() if v not in (0, None, {}, 0.0)}


async def run_embed(surface: Surface, out: Output, progress: Progress) -> int:
    """Embed the surface's grouped tools and print what it did; exit status 0, or 1 when some tool was left
    without a vector (an embedder error, named; an embedder call past `embedding_timeout` is one), the cache
    file could not be used (its vectors were not saved), the embedder has no name of its own (its vectors are
    never cached: `ResolvedEmbedder.named`), or the proxy cannot prepare the sources.

    JSON document: `embedder` (identity), `store_key`, `dimensions`, `cache` (`kind` `file` / `memory` /
    `custom`; a file's `path`, `vectors` it holds for this embedder, `fell_back`, `fault`), `tools` (distinct
    tool texts), `embedded`, `cached` (found in the cache), `cut` (cut to the model's input limit first),
    `failed`, `seconds`, `usage` (the embedder's non-zero usage fields, e.g. `input_tokens`), `error` (or null).

    Raises:
        SourceError: no embedder is configured.
    """
    capability = surface.capability()
    vectors = quiet_vectors(capability)
    if vectors is None:
        raise SourceError(NO_EMBEDDER)
    with progress.step('preparing the tools with the proxy') as step:
        run = await probe(toolsets=surface.direct_toolsets(), capabilities=[*surface.direct_capabilities(), capability])
        step.done('prepared with the proxy')
    if run.error is not None or run.snapshot is None:
        out.error(
            f'the proxy cannot prepare these sources: {run.error}\nRun `toolproxy check` to list every problem with its fix.'
        )
        return 1
    identity = vectors.embedder.identity
    with progress.step(f'embedding tool texts with {identity}', total=0) as bar:
        counts = await embed_surface(capability, run.snapshot.tools, progress=bar.update)
        bar.done(f'{plural(counts.tools, "tool text")}: {num(counts.embedded)} embedded, {num(counts.cached)} cached')
    key = vectors.embedder.store_key
    cache = cache_info(vectors.stores.store(), key)
    doc: dict[str, Any] = {
        'embedder': identity,
        'store_key': key,
        'dimensions': vectors.dimensions,
        'cache': cache,
        'tools': counts.tools,
        'embedded': counts.embedded,
        'cached': counts.cached,
        'cut': counts.cut,
        'failed': counts.failed,
        'seconds': round(counts.seconds, 3),
        'usage': usage_fields(counts.usage),
        'error': counts.error,
    }
    unnamed = vectors.stores.store() is None and vectors.stores.refused
    status = 1 if counts.failed or cache.get('fell_back') or unnamed else 0
    if out.as_json:
        out.json(doc)
        return status
    dims = f', {vectors.dimensions} dimensions' if vectors.dimensions else ''
    usage = ', '.join(f'{k} {num(v) if isinstance(v, int) else v}' for k, v in doc['usage'].items()) or 'none reported'
    out.line(f'embedder  {identity}{dims}')
    out.line(f'cache     {describe_cache(cache)}')
    out.line(
        f'tools     {plural(counts.tools, "tool text")}: {num(counts.embedded)} embedded, {num(counts.cached)} from '
        f'the cache, {num(counts.cut)} cut to the input limit, {num(counts.failed)} failed'
    )
    out.line(f'time      {counts.seconds:.2f} s')
    out.line(f'usage     {usage}')
    if counts.error is not None:
        hint = TIMEOUT_HINT if counts.error.startswith('EmbedderTimeout(') else ''
        out.error(f'the embedder failed, {plural(counts.failed, "tool")} left without a vector: {counts.error}{hint}')
    elif unnamed:
        out.error('the embedder has no name of its own: no vector was saved (the warning above says how to name it)')
    elif cache.get('fell_back'):
        out.error(f'the embedding cache {cache["path"]} cannot be used ({cache["fault"]}): no vector was saved')
    return status
