"""Short retries for calls of tool names that do not exist, instead of Pydantic AI's list of every registered tool.

Pydantic AI answers a call of an unknown tool name with `Unknown tool name: 'x'. Available tools: ...`, listing
every tool in the step's `ToolManager`, the proxy's hidden members included: 71 KB at 1,853 grouped tools and
310 KB at 10,000, re-sent with every later request, naming tools the model must not call directly. Models often
call the local name of a tool they just found. Before each model request the proxy rewrites those retries (in the
run's message history, so later requests carry the short text too) into one that says what to do next:

- the name is a member's local name: the envelope to send, `{"group": ..., "tool": ..., "arguments": {...}}`;
- else the grouped tools the search index ranks first for the name (a typo, another spelling), as envelopes;
- and always: `search_proxy_tools` with the current groups, and at most three close names of the tools the model
  can call directly.

The retry budget is unchanged: Pydantic AI counts the unknown name against the agent's default retries, as it does
without the proxy. Only the text changes, and only of retries Pydantic AI marked `cause='unknown_tool'`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from ._directory import Directory
from ._messages import bounded, listing, shown
from ._runtime import ProxyRuntime

__all__ = ('shorten_unknown_tool_retries', 'unknown_tool_message')

MAX_SUGGESTIONS = 3
MAX_VISIBLE_COMPARED = 2_000
"""Direct tools compared for close names; past that many, none are suggested (the comparison is quadratic-ish)."""


def _is_unknown_tool_retry(part: object) -> bool:
    if not isinstance(part, ToolReturnPart) or part.outcome != 'retried':
        return False
    info = getattr(part, 'retry', None)
    content = part.content
    return getattr(info, 'cause', None) == 'unknown_tool' and isinstance(content, str) and _REWRITTEN not in content


_REWRITTEN = 'It is not a tool you can call directly'
"""Part of every rewritten text: a part holding it is not rewritten again."""


def _envelope(call_name: str, group: str, tool: str) -> str:
    return f'`{call_name}` with {{"group": "{group}", "tool": "{tool}", "arguments": {{...}}}}'


def _ranked(runtime: ProxyRuntime, directory: Directory, name: str) -> list[tuple[str, str]]:
    """`(group, tool)` of the members the search index ranks first for `name` as a query (synced to `directory`)."""
    cache = runtime.search_index
    query = name.replace('_', ' ').replace('-', ' ')[:256]
    with cache.lock:
        try:
            cache.sync(directory)
            _, keys = cache.index.search(query, None, 0, MAX_SUGGESTIONS)
        except RuntimeError:  # a panic in the Rust core: no suggestions, a fresh index next time
            cache.reset()
            return []
    found = [directory.member(key) for key in keys]
    return [(m.group, m.local_name) for m in found if m is not None]


def unknown_tool_message(name: str, runtime: ProxyRuntime, directory: Directory, visible: Sequence[str]) -> str:
    """The retry text for a call of the unknown tool `name` (see the module docs); at most `MAX_MESSAGE_CHARS`."""
    config = runtime.config
    shown_name = shown(name)
    exact = [(m.group, m.local_name) for m in (directory.member_of(g, name) for g in directory.groups) if m is not None]
    if exact:
        envelopes = ' or '.join(_envelope(config.call_name, g, t) for g, t in exact[:MAX_SUGGESTIONS])
        head = f'Unknown tool name: {shown_name}. {_REWRITTEN}: it is a grouped tool. Call {envelopes}.'
    else:
        ranked = _ranked(runtime, directory, name) if directory and len(name) <= 256 else []
        head = f'Unknown tool name: {shown_name}. {_REWRITTEN}.'
        if ranked:
            head += (
                ' Grouped tools that match it: ' + '; '.join(_envelope(config.call_name, g, t) for g, t in ranked) + '.'
            )
    direct = [n for n in visible if n not in (config.search_name, config.call_name)]
    close = (
        difflib.get_close_matches(name, direct, n=MAX_SUGGESTIONS, cutoff=0.6)
        if len(direct) <= MAX_VISIBLE_COMPARED and len(name) <= 256
        else []
    )
    tail = f' Direct tools with close names: {listing(close)}.' if close else ''
    return bounded(
        f'{head} Find grouped tools with `{config.search_name}` (groups: {listing(directory.groups)}), then call them '
        f'through `{config.call_name}`.{tail}'
    )


def shorten_unknown_tool_retries(
    messages: Sequence[ModelMessage], runtime: ProxyRuntime, directory: Directory, visible: Sequence[str]
) -> None:
    """Replace, in place, every unknown-tool retry in `messages` not rewritten yet by `unknown_tool_message`.

    `messages` is the request's own list (`ModelRequestContext.messages`); its message objects are the run's
    history, so a rewritten part stays rewritten for every later request. Every request is scanned, not only the
    latest: a history passed in with `message_history=` (a run that ended right after such a retry, continued) holds
    retries this proxy never saw. A rewritten part holds `_REWRITTEN` and is not rewritten again.
    """
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        parts: Any = message.parts
        if not any(_is_unknown_tool_retry(p) for p in parts):
            continue
        new_parts = [
            replace(p, content=unknown_tool_message(p.tool_name, runtime, directory, visible))
            if _is_unknown_tool_retry(p)
            else p
            for p in parts
        ]
        if isinstance(parts, list):
            parts[:] = new_parts
        else:  # pragma: no cover - a tuple of parts
            message.parts = new_parts
