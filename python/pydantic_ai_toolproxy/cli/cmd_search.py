"""`toolproxy search`: one search page exactly as the model gets it.

A real agent run over the sources under the `ToolProxyCapability`; its scripted model calls the search
control once with the given arguments, and the command prints the `ToolReturnPart` the model got back:
`{"tools": [...], "total": N, "next_offset": K | null}` (docs/usage.md).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..capability import ToolProxyCapability
from ..controls.search import entry_size
from ._embed import embed_surface
from ._hybrid import quiet_vectors
from ._probe import probe
from ._progress import Progress
from ._render import Column, Output, num
from ._sources import SourceError, Surface

__all__ = ('run_search',)


async def _embed_first(surface: Surface, capability: ToolProxyCapability[Any], progress: Progress) -> str | None:
    """With an embedder: give every grouped tool its vector before the search (from the cache, else the embedder,
    stored in the cache), so the page is the hybrid ranking of a warmed-up run. An embedder that fails is warned
    about and the search goes on (the tools without a vector rank by keywords, as in a run). Returns the error
    message when the proxy cannot prepare the sources, else None."""
    vectors = quiet_vectors(capability)
    if vectors is None:
        return None
    with progress.step('preparing the tools with the proxy'):
        run = await probe(toolsets=surface.direct_toolsets(), capabilities=[*surface.direct_capabilities(), capability])
    if run.error is not None or run.snapshot is None:
        return f'the proxy cannot prepare these sources: {run.error}\nRun `toolproxy check` to list every problem with its fix.'
    with progress.step(f'embedding tool texts with {vectors.embedder.describe()}', total=0) as bar:
        counts = await embed_surface(capability, run.snapshot.tools, progress=bar.update)
    if counts.error is not None:
        progress.warn(
            f'the embedder failed, {counts.failed:,} of {counts.tools:,} tools rank by keywords alone: {counts.error}'
        )
    return None


async def run_search(
    surface: Surface,
    out: Output,
    progress: Progress,
    *,
    query: str,
    group: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    explain: bool = False,
) -> int:
    """Run one search the way the model would and print the page.

    With `explain`, each result is followed by why it scored what it did (`ToolProxyCapability.explain`): every
    query word it matched, the field it matched in and its share of the score (`--json` adds an `explain` list
    beside the page: `{"page": ..., "explain": [...]}`); with an embedder, also its fused score, as the keyword
    share plus the semantic share (the weight times the normalized semantic score of its cosine).

    With an embedder (`--embedder`), every grouped tool gets its vector first (the cache, else the embedder, whose
    vectors are stored in the cache), so the page is what a run whose vectors are ready gets.

    Only the arguments given are sent (the model may omit `group`, `limit` and `offset` too).
    `--json` prints the tool return exactly as the model receives it (compact JSON, UTF-8); otherwise a
    table of the entries with each entry's size in bytes, then `total`, `next_offset` and the page size.

    Returns:
        0 for a page; 1 when the search is refused (unknown group, `limit` out of range, negative `offset`:
        the retry message the model would get) or fails (an entry larger than `max_search_bytes`), or when
        the proxy cannot prepare the sources. The message goes to stderr, or as
        `{"outcome": ..., "message": ...}` to stdout with `--json`.

    Raises:
        SourceError: no grouped tools, so the model is not offered the search control.
    """
    config = surface.config
    args: dict[str, Any] = {'query': query}
    if group is not None:
        args['group'] = group
    if limit is not None:
        args['limit'] = limit
    if offset is not None:
        args['offset'] = offset
    capability = surface.capability()
    failed = await _embed_first(surface, capability, progress)
    if failed is not None:
        out.error(failed)
        return 1
    with progress.step(f'searching {json.dumps(args, ensure_ascii=False)}'):
        run = await probe(
            toolsets=surface.direct_toolsets(),
            capabilities=[*surface.direct_capabilities(), capability],
            calls=lambda snapshot: [(config.search_name, args)] if config.search_name in snapshot.offered() else [],
        )
    if run.error is not None:
        out.error(
            f'the proxy cannot prepare these sources: {run.error}\nRun `toolproxy check` to list every problem with its fix.'
        )
        return 1
    part = run.returns.get('probe-0')
    if part is None:
        raise SourceError(f'the model is not offered {config.search_name}: no group has any tools')
    if part.outcome != 'success':
        message = part.model_response_str(wrap_if_error=False)
        if out.as_json:
            out.json({'outcome': part.outcome, 'message': message})
        else:
            out.error(f'the search was {"refused" if part.outcome == "retried" else part.outcome}: {message}')
        return 1
    text = part.model_response_str()
    page = json.loads(text)
    why = capability.explain(query, [(e['group'], e['tool']) for e in page['tools']], group=group) if explain else []
    if out.as_json:
        if explain:
            out.json({'page': page, 'explain': [asdict(w) for w in why]})
        else:
            out.raw(text)
        return 0
    start = offset or 0
    out.line(f'{config.search_name} {json.dumps(args, ensure_ascii=False)}')
    if page['tools']:
        out.table(
            [
                Column('#', 'right'),
                Column('group'),
                Column('tool'),
                Column('bytes', 'right'),
                Column('description', max_width=64),
            ],
            [
                [str(start + i + 1), e['group'], e['tool'], num(entry_size(e)), e['description']]
                for i, e in enumerate(page['tools'])
            ],
        )
    else:
        out.line('(no tools on this page)')
    for i, w in enumerate(why):
        parts = (
            ', '.join(f'{m.token} in {m.field}{" (stem)" if m.via_stem else ""} {m.share:.0%}' for m in w.matches)
            or 'no word matched'
        )
        head = 'exact name; ' if w.exact else ''
        out.line(
            f'{start + i + 1}. {w.group}/{w.tool}: {head}score {w.score:.2f} (coordination {w.coordination:.2f}): {parts}'
        )
        if w.fused is not None:
            semantic = 'no vector' if w.cosine is None else f'semantic {w.semantic or 0:.2f}, cosine {w.cosine:.3f}'
            out.line(
                f'   hybrid: fused {w.fused:.3f} = keyword share {w.keyword_share or 0:.3f} + semantic share '
                f'{w.semantic_share or 0:.3f} (weight {w.weight:g}; {semantic})'
            )
    next_offset = page['next_offset']
    out.line(
        f'total {num(page["total"])}, next_offset {"null" if next_offset is None else next_offset}, '
        f'page {num(len(text.encode()))} of {num(config.max_search_bytes)} bytes'
    )
    return 0
