"""The search control: ranked, byte-budgeted pages of complete entries (docs/usage.md: the search control's
arguments and pages; ranking: `hybrid.ranking`)."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import tool_return_ta
from pydantic_ai.tools import RunContext
from pydantic_core import from_json

from .. import _core
from .._interop import interop_for
from .._messages import FailureReason, ProxyFailed, cut, failed, listing, retry, shown
from .._runtime import ProxyRuntime
from ..grouping.directory import Directory, Member
from ..hybrid.ranking import KEYWORD, Ranking, await_vectors, rank
from ..search.index_cache import SearchIndexCache

__all__ = ('KEYWORD', 'Ranking', 'entry_for', 'entry_json', 'entry_size', 'search_page')


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


class _StepIndex:
    """The index a search of the search control ranks (`hybrid.ranking.IndexSource`): the slot of the proxy's
    `SearchIndexCache` for the step's `directory`, synced by `SearchIndexCache.sync`. Call with the cache's lock held."""

    __slots__ = ('cache', 'directory', 'run_id')

    def __init__(self, cache: SearchIndexCache, directory: Directory, run_id: str | None) -> None:
        self.cache = cache
        self.directory = directory
        self.run_id = run_id

    def sync(self) -> _core.SearchIndex:
        """The slot for the step's directory, synced to it.

        Raises:
            ProxyFailed: the core panicked (the index is dropped, rebuilt at the next search).
        """
        cache = self.cache
        try:
            cache.sync(self.directory, self.run_id)
        except RuntimeError as e:  # a panic in the Rust core (see `_core`): start from a fresh index next time
            raise _core_failed(cache, e) from e
        return cache.index

    def reset(self) -> None:
        """Drop every slot's index (the embedding model changed)."""
        self.cache.reset_all()


async def _rank(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    directory: Directory,
    query: str,
    groups: list[str] | None,
    offset: int,
    limit: int,
) -> tuple[int, list[str], Ranking]:
    """`(total, keys, ranking)` of one search: the index synced to the step's `directory` and ranked under the
    lock (`hybrid.ranking.rank` decides between keywords and hybrid). With an embedder, the vectors are awaited
    first, outside the lock (`hybrid.ranking.await_vectors`), and the index synced again before ranking (a
    concurrent run may have moved it to its own step meanwhile).

    Raises:
        ProxyFailed: the core panicked (the index is dropped, rebuilt at the next search).
    """
    cache = runtime.search_index
    vectors = runtime.vectors
    source = _StepIndex(cache, directory, ctx.run_id)
    query_vector = None
    if vectors is not None:
        [query_vector] = await await_vectors(vectors, source, [query], runtime.config.embedding_wait, ctx.run_id)
    with cache.lock:
        index = source.sync()
        try:
            ranked = rank(index, vectors, query, query_vector, groups, offset, limit)
        except RuntimeError as e:  # a panic in the Rust core (see `_core`): start from a fresh index next time
            raise _core_failed(cache, e) from e
    return ranked.total, ranked.keys, ranked.ranking


async def search_page(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    query: str,
    group: str | None,
    limit: int | None,
    offset: int,
) -> tuple[dict[str, Any], Ranking, int]:
    """Rank the current step's members for `query` and return one page `{tools, total, next_offset}`, with the
    `Ranking` that ran and the page's size in UTF-8 JSON bytes as the model receives it (`_core.plan_page`'s, from
    the entries serialized once: the span reads it, nothing serializes the page again to count it).

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
    total, keys, ranking = await _rank(ctx, runtime, directory, query, groups, offset, limit)
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
    page = {'tools': [from_json(b) for b in encoded[:count]], 'total': total, 'next_offset': next_offset}
    return page, ranking, page_bytes
