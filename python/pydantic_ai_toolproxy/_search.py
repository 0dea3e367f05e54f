"""The search control: ranked, byte-budgeted pages of complete entries (spec: "Configure names and discovery limits")."""

from __future__ import annotations

from typing import Any

from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import tool_return_ta
from pydantic_ai.tools import RunContext

from . import _core
from ._codeact import codeact_eligible
from ._directory import Directory, Member
from ._runtime import ProxyRuntime

__all__ = ('run_search', 'entry_for')


def entry_for(member: Member, instructions: list[str], codeact_eligible: bool = False) -> dict[str, Any]:
    """One search result entry, keys in the documented order.

    `codeact_eligible` is the target's own CodeAct policy (see `_codeact.codeact_eligible`); grouping grants none.
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


def entry_size(entry: dict[str, Any]) -> int:
    """UTF-8 bytes of the entry as Pydantic AI serializes tool returns for the model (`tool_return_ta`).

    Raises:
        pydantic_core.PydanticSerializationError: the entry cannot be JSON (a circular or more than ~250-deep
            schema, a lone surrogate, an object JSON cannot represent); `_sized` turns that into a message.
    """
    return len(tool_return_ta.dump_json(entry, by_alias=True))


def _sized(entry: dict[str, Any]) -> int | str:
    """`entry_size(entry)`, or the reason (cut to 200 characters) why the entry cannot be serialized at all."""
    try:
        return entry_size(entry)
    except (ValueError, TypeError, RecursionError) as e:  # PydanticSerializationError is a ValueError
        reason = str(e).removeprefix('Error serializing to JSON: ')
        return reason if len(reason) <= 200 else reason[:197] + '...'


def _check_group(directory: Directory, group: str | None, runtime: ProxyRuntime) -> None:
    if group is not None and group not in directory.groups:
        raise ModelRetry(
            f'Unknown group {group!r}. Current groups: {", ".join(directory.groups) or "(none)"}. '
            f'Pick one of them, or omit `group` to search all groups.'
        )


async def run_search(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    query: str,
    group: str | None,
    limit: int | None,
    offset: int,
) -> dict[str, Any]:
    """Rank the current step's members for `query` and return one page `{tools, total, next_offset}`.

    Raises:
        ModelRetry: unknown group, a `limit` outside 1..max_results, or a negative offset.
        ToolFailed: an entry that cannot fit into `max_search_bytes` on its own (names group, tool, size, budget), or
            one that cannot be serialized as JSON at all (circular or too deeply nested schema; names group and tool).
            Either only when it would start the page: otherwise the page ends before it.
    """
    config = runtime.config
    directory = runtime.directory(ctx)
    if not isinstance(query, str):
        raise ModelRetry('`query` must be a string of keywords (or "" to browse).')
    _check_group(directory, group, runtime)
    if limit is None:
        limit = config.default_limit
    if limit < 1 or limit > config.max_results:
        raise ModelRetry(
            f'`limit` must be between 1 and {config.max_results}; got {limit}. '
            f'Omit it for pages of {config.default_limit}, and page with `offset`.'
        )
    if offset < 0:
        raise ModelRetry(f'`offset` must be 0 or a `next_offset` from an earlier search; got {offset}.')
    groups = [group] if group is not None else None
    cache = runtime.search_index
    with cache.lock:
        try:
            cache.sync(directory)
            cache.searched_by = ctx.run_id
            total, keys = cache.index.search(query, groups, offset, limit)
        except RuntimeError as e:  # a panic in the Rust core (see `_core`): start from a fresh index next time
            cache.reset()
            raise ToolFailed(f'Search failed inside the ToolProxy core ({e}); the index was rebuilt, search again.') from e
    include = runtime.instructions_enabled(ctx)
    instructions: dict[str, list[str]] = {}
    entries: list[dict[str, Any]] = []
    for key in keys:
        member = directory.member(key)
        assert member is not None  # ranked under the same lock that synced the index to this directory
        if member.group not in instructions:
            instructions[member.group] = await member.toolset.source_instructions(ctx) if include else []
        entries.append(entry_for(member, instructions[member.group], codeact_eligible(ctx, key, member.tool)))
    measured = [_sized(e) for e in entries]
    broken = next((i for i, m in enumerate(measured) if isinstance(m, str)), None)
    if broken == 0:
        first = entries[0]
        raise ToolFailed(
            f'The entry of tool {first["tool"]!r} in group {first["group"]!r} cannot be sent as JSON ({measured[0]}), '
            f'so search cannot show its schema; search with offset={offset + 1} to skip it, and ask the host to fix '
            'its schema or expose it directly.'
        )
    if broken is not None:  # the page ends before it; the search that starts at it explains
        entries = entries[:broken]
    sizes: list[int] = measured[: len(entries)]  # type: ignore[assignment]
    try:
        count, next_offset, _size = _core.plan_page(sizes, total, offset, config.max_search_bytes)
    except ValueError:
        first = entries[0]
        raise ToolFailed(
            f'The schema of tool {first["tool"]!r} in group {first["group"]!r} is {sizes[0]} bytes, which cannot fit '
            f'in one search page (budget {config.max_search_bytes} bytes). It cannot be used through the proxy; '
            f'search with offset={offset + 1} to skip it, and ask the host to expose it directly or simplify its schema.'
        ) from None
    return {'tools': entries[:count], 'total': total, 'next_offset': next_offset}
