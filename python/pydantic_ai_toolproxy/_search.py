"""The search control: ranked, byte-budgeted pages of complete entries (spec: "Configure names and discovery limits")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai.messages import tool_return_ta
from pydantic_ai.tools import RunContext
from pydantic_core import from_json

from . import _core
from ._directory import Directory, Member
from ._index_cache import SearchIndexCache
from ._interop import interop_for
from ._messages import FailureReason, ProxyFailed, cut, failed, listing, retry, shown
from ._runtime import ProxyRuntime
from ._vectors import ToolVectors

__all__ = ('KEYWORD', 'Ranking', 'entry_for', 'entry_json', 'entry_size', 'search_page')


@dataclass(frozen=True)
class Ranking:
    """Which ranking one search ran, for telemetry (span attributes) and tests; never shown to the model.

    Attributes:
        kind: `'hybrid'` (keywords fused with the query's cosine in the core) or `'keyword'`.
        reason: Why a surface with an embedder ranked by keywords: `'browse'` (empty query), `'query-timeout'`,
            `'embedder-error'`, `'no-vectors'` (no tool of the index has a vector yet), `'dimensions'` (the
            query vector's size differs from the tools'); None otherwise.
        tools_with_vectors: Tools of the index with a vector when it ranked (0 without an embedder).
        tools: Tools of the index followed by the vectors (0 without an embedder).
    """

    kind: Literal['keyword', 'hybrid']
    reason: str | None = None
    tools_with_vectors: int = 0
    tools: int = 0


KEYWORD = Ranking('keyword')
"""The ranking of every search of a surface without an embedder."""

MAX_QUERY_BYTES: int = _core.MAX_QUERY_BYTES


def entry_for(member: Member, instructions: list[str], codeact_eligible: bool = False) -> dict[str, Any]:
    """One search result entry, keys in the documented order.

    `codeact_eligible` is the target's own CodeAct policy (see `_interop.RunInterop.codeact_eligible`); grouping
    grants none.
    """
    tool_def = member.tool_def
    return {
        'group': member.group,
        'tool': member.local_name,
        'description': tool_def.description or '',
        'parameters_json_schema': tool_def.parameters_json_schema,
        'return_schema': tool_def.return_schema,
        'instructions': instructions,
        'codeact_eligible': codeact_eligible,
    }


def entry_json(entry: dict[str, Any]) -> bytes:
    """The entry as the UTF-8 JSON Pydantic AI sends the model for a tool return (`tool_return_ta`).

    Raises:
        pydantic_core.PydanticSerializationError: the entry cannot be JSON (a circular or more than ~250-deep
            schema, a lone surrogate, an object JSON cannot represent); `_serialized` turns that into a message.
    """
    return tool_return_ta.dump_json(entry, by_alias=True)


def entry_size(entry: dict[str, Any]) -> int:
    """UTF-8 bytes of the entry as Pydantic AI serializes tool returns for the model (see `entry_json`)."""
    return len(entry_json(entry))


def _serialized(entry: dict[str, Any]) -> bytes | str:
    """`entry_json(entry)`, or the reason (cut to 200 characters) why the entry cannot be serialized at all."""
    try:
        return entry_json(entry)
    except Exception as e:  # PydanticSerializationError (a ValueError), RecursionError, a failing custom serializer
        return cut(str(e).removeprefix('Error serializing to JSON: '), 200)


def _check_group(directory: Directory, group: str | None) -> None:
    if group is not None and group not in directory.groups:
        raise retry(
            f'Unknown group {shown(group)}. Current groups: {listing(directory.groups)}. '
            f'Pick one of them, or omit `group` to search all groups.'
        )


def _check_query(query: object) -> str:
    """The query, once it is a string of at most `MAX_QUERY_BYTES` UTF-8 bytes.

    Raises:
        ModelRetry: not a string, or too long (the cap keeps one search short on the event loop's thread).
    """
    if not isinstance(query, str):
        raise retry('`query` must be a string of keywords (or "" to browse).')
    size = len(query) if query.isascii() else len(query.encode('utf-8', 'surrogatepass'))
    if size > MAX_QUERY_BYTES:
        raise retry(
            f'`query` is {size} bytes; at most {MAX_QUERY_BYTES} bytes are searched. Search with a few keywords '
            'naming the action and the object (5-20 words), e.g. "customer name".'
        )
    return query


def _oversized(entry: dict[str, Any], size: int, page_bytes: int, offset: int, budget: int) -> ProxyFailed:
    """The failure for an entry that cannot fit alone in a page of `budget` bytes (it needs `page_bytes`).

    Names the source instructions as the cause when the entry would fit without them: then every entry of the
    group is too large, and the group's instructions are what to shorten. The same figures ride beside the text as
    a `FailureReason` (kind `oversized-entry`), which `toolproxy check` reads.
    """
    tool, group = shown(entry['tool'], 200), shown(entry['group'], 200)
    instructions = entry['instructions']
    reason = FailureReason('oversized-entry', entry['group'], entry['tool'], entry_bytes=size, budget=budget)
    if instructions:
        alone = _core.plan_page([entry_size({**entry, 'instructions': []})], offset + 1, offset, budget)[0]
        if alone:
            instruction_bytes = size - entry_size({**entry, 'instructions': []})
            return failed(
                f'The entry of tool {tool} in group {group} is {size} bytes, {instruction_bytes} of them the source '
                f'instructions of group {group}, which every entry of that group carries: with them it cannot fit in '
                f'one search page (it needs {page_bytes} bytes, budget {budget} bytes). Search other groups, and ask '
                'the host to shorten the instructions of that group or to raise max_search_bytes.',
                FailureReason(
                    'oversized-entry',
                    entry['group'],
                    entry['tool'],
                    entry_bytes=size,
                    instruction_bytes=instruction_bytes,
                    budget=budget,
                ),
            )
    return failed(
        f'The schema of tool {tool} in group {group} is {size} bytes, which cannot fit in one search page (it needs '
        f'{page_bytes} bytes, budget {budget} bytes). It cannot be used through the proxy; search with '
        f'offset={offset + 1} to skip it, and ask the host to expose it directly or simplify its schema.',
        reason,
    )


def _unserializable(entry: dict[str, Any], reason: str, offset: int) -> ProxyFailed:
    """The failure for an entry that cannot be sent as JSON, naming what cannot: the group's source instructions
    (then every entry of the group fails alike), the description, or the schema."""
    tool, group = shown(entry['tool']), shown(entry['group'])
    why = FailureReason('unserializable-entry', entry['group'], entry['tool'])
    if entry['instructions'] and not isinstance(_serialized({**entry, 'instructions': []}), str):
        return failed(
            f'The source instructions of group {group} cannot be sent as JSON ({reason}), and every entry of that '
            'group carries them, so search cannot show its tools. Search other groups, and ask the host to fix the '
            'instructions of that group.',
            why,
        )
    if not isinstance(_serialized({**entry, 'instructions': [], 'description': ''}), str):
        what = 'description'
    else:
        what = 'schema'
    return failed(
        f'The {what} of tool {tool} in group {group} cannot be sent as JSON ({reason}), so search cannot show it; '
        f'search with offset={offset + 1} to skip it, and ask the host to fix its {what} or expose it directly.',
        why,
    )


def _core_failed(cache: SearchIndexCache, e: RuntimeError) -> ProxyFailed:
    """A panic in the Rust core (see `_core`): drop the index (rebuilt at the next search). Call with `lock` held."""
    cache.reset()
    return failed(
        f'Search failed inside the ToolProxy core ({cut(str(e), 300)}); the index was rebuilt, search again.',
        FailureReason('core-error'),
    )


async def _rank_hybrid(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    vectors: ToolVectors,
    directory: Directory,
    query: str,
    groups: list[str] | None,
    offset: int,
    limit: int,
) -> tuple[int, list[str], Ranking]:
    """`(total, keys, ranking)` of a surface with an embedder.

    Syncs the index first (so the step's tools without a vector are queued), waits up to `embedding_wait` for
    them and up to `query_timeout` for the query vector (both outside the lock; when the query vector shows the
    store's tool vectors to be of another size, those are embedded again and waited for once more), then syncs
    again (a concurrent
    run may have moved the index to its own step) and ranks under the lock: `search_hybrid` when the query has a
    vector and some tool has one, else `search` (the keyword ranking, exactly).
    """
    cache = runtime.search_index
    with cache.lock:
        if vectors.switch_model():  # another model than the last search's: no vector of that one stays attached
            cache.reset_all()
        try:
            cache.sync(directory, ctx.run_id)
        except RuntimeError as e:
            raise _core_failed(cache, e) from e
        claimed = vectors.claim(cache.index)
    try:
        await vectors.wait_for_tools(runtime.config.embedding_wait, ctx.run_id)
    finally:
        with cache.lock:
            vectors.release(claimed)
    query_vector, reason = await vectors.query_vector(query)
    if query_vector is not None and vectors.adopt_query(query_vector):  # the store's vectors had another size
        with cache.lock:
            claimed = vectors.claim(cache.index)
        try:
            await vectors.wait_for_tools(runtime.config.embedding_wait, ctx.run_id)  # for their replacements
        finally:
            with cache.lock:
                vectors.release(claimed)
    with cache.lock:
        try:
            cache.sync(directory, ctx.run_id)
            with_vectors, tools = vectors.coverage(cache.index)
            if query_vector is not None:
                if with_vectors == 0:
                    reason = 'no-vectors'
                elif len(query_vector) // 4 != vectors.dimensions:
                    reason = 'dimensions'
                    vectors.dimension_mismatch(len(query_vector) // 4)
            if reason is None and query_vector is not None:
                total, keys = cache.index.search_hybrid(query, query_vector, groups, offset, limit, vectors.weight)
                vectors.ranked(None, with_vectors, tools)
                return total, keys, Ranking('hybrid', None, with_vectors, tools)
            total, keys = cache.index.search(query, groups, offset, limit)
            vectors.ranked(reason, with_vectors, tools)
            return total, keys, Ranking('keyword', reason, with_vectors, tools)
        except RuntimeError as e:
            raise _core_failed(cache, e) from e


async def search_page(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    query: str,
    group: str | None,
    limit: int | None,
    offset: int,
) -> tuple[dict[str, Any], Ranking]:
    """Rank the current step's members for `query` and return one page `{tools, total, next_offset}`, with the
    `Ranking` that ran.

    With an embedder (hybrid search), `total` counts the keyword matches plus the tools among the query's 50
    nearest (by cosine, within the searched group) that are closer than the 50th; `next_offset` pages through
    exactly that ranked set, which stays the same for every page of one query while the tools and their vectors
    do not change. Exact names still rank first. Without an embedder, `total` counts the keyword matches.

    The page's entries are decoded from the JSON that was measured, so the page the model receives is exactly
    the one planned and holds no reference to a host's schema objects: a schema edited in place later does not
    change a page already returned. An `offset` at or past `total` (a stale `next_offset`) returns the empty
    page `{"tools": [], "total": N, "next_offset": null}`.

    Raises:
        ModelRetry: unknown group, a `limit` outside 1..max_results, a negative offset, or a query that is not a
            string or longer than `MAX_QUERY_BYTES`.
        ProxyFailed: (a `ToolFailed` with a `FailureReason`) an entry that cannot fit into `max_search_bytes` on its own (names group, tool, size, budget, and
            the group's instructions when they are the cause), or one that cannot be serialized as JSON at all
            (circular or too deeply nested schema; names group and tool). Either only when it would start the
            page: otherwise the page ends before it.
    """
    config = runtime.config
    directory = runtime.directory(ctx)
    query = _check_query(query)
    _check_group(directory, group)
    if limit is None:
        limit = config.default_limit
    if limit < 1 or limit > config.max_results:
        raise retry(
            f'`limit` must be between 1 and {config.max_results}; got {shown(limit)}. '
            f'Omit it for pages of {config.default_limit}, and page with `offset`.'
        )
    if offset < 0:
        raise retry(f'`offset` must be 0 or a `next_offset` from an earlier search; got {shown(offset)}.')
    groups = [group] if group is not None else None
    vectors = runtime.vectors
    if vectors is None:
        ranking = KEYWORD
        cache = runtime.search_index
        with cache.lock:
            try:
                cache.sync(directory, ctx.run_id)
                total, keys = cache.index.search(query, groups, offset, limit)
            except RuntimeError as e:  # a panic in the Rust core (see `_core`): start from a fresh index next time
                raise _core_failed(cache, e) from e
    else:
        total, keys, ranking = await _rank_hybrid(ctx, runtime, vectors, directory, query, groups, offset, limit)
    include = runtime.instructions_enabled(ctx)
    interop = interop_for(ctx)
    instructions: dict[str, list[str]] = {}
    entries: list[dict[str, Any]] = []
    for key in keys:
        member = directory.member(key)
        assert member is not None  # ranked under the same lock that synced the index to this directory
        if member.group not in instructions:
            instructions[member.group] = await member.toolset.source_instructions(ctx) if include else []
        entries.append(entry_for(member, instructions[member.group], interop.codeact_eligible(key, member.tool)))
    serialized = [_serialized(e) for e in entries]
    broken = next((i for i, m in enumerate(serialized) if isinstance(m, str)), None)
    if broken == 0:
        raise _unserializable(entries[0], serialized[0], offset)  # type: ignore[arg-type]
    if broken is not None:  # the page ends before it; the search that starts at it explains
        serialized = serialized[:broken]
    encoded: list[bytes] = serialized  # type: ignore[assignment]
    count, next_offset, page_bytes = _core.plan_page([len(b) for b in encoded], total, offset, config.max_search_bytes)
    if count == 0 and encoded:
        raise _oversized(entries[0], len(encoded[0]), page_bytes, offset, config.max_search_bytes)
    return {'tools': [from_json(b) for b in encoded[:count]], 'total': total, 'next_offset': next_offset}, ranking
