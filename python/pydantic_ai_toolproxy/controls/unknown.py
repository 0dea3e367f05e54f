"""Short retries for calls of tool names that do not exist, instead of Pydantic AI's list of every registered tool.

Pydantic AI answers a call of an unknown tool name with `Unknown tool name: 'x'. Available tools: ...`, listing
every tool in the step's `ToolManager`, the proxy's hidden members included (its size: docs/performance.md), re-sent
with every later request, naming tools the model must not call directly. Models often
call the local name of a tool they just found. Before each model request the proxy replaces, in what that request
sends, every such retry by one that says what to do next:

- the name is a member's local name: the envelope to send, `{"group": ..., "tool": ..., "arguments": {...}}`;
- else the grouped tools the search index ranks first for the name (a typo, another spelling), as envelopes;
- and always: `search_proxy_tools` with the current groups, and at most three close names of the tools the model
  can call directly.

What is sent is a copy: the message objects of the run's history, of the host's `message_history` and of an
earlier run's `result.all_messages()` are never changed, so a stored transcript keeps Pydantic AI's own text and
an agent without the proxy can continue it. A retry is recognised by what Pydantic AI recorded on it
(`outcome='retried'`, `cause='unknown_tool'`), never by its text, so no tool name (not even the words of the
rewritten text) keeps the long list; the first copy made of a part in a run is reused for that part in every later request of the run
(the same bytes every time, by the identity of the original part and the run), and a copy the proxy made is
recognised by its identity and sent as it is. Another run (another tenant's, starting from the same transcript
objects) gets a copy written for its own step's tools, never one written for another run's.

The retry budget is unchanged: Pydantic AI counts the unknown name against the agent's default retries, as it does
without the proxy. Only the text the model receives changes.
"""

from __future__ import annotations

import copy
import difflib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from .._messages import bounded, listing, shown
from .._runtime import ProxyRuntime
from ..grouping.directory import Directory

__all__ = ('RetryRewrites', 'rewrites_of', 'shorten_unknown_tool_retries', 'unknown_tool_message')

MAX_SUGGESTIONS = 3
MAX_VISIBLE_COMPARED = 2_000
"""Direct tools compared for close names; past that many, none are suggested (the comparison is quadratic-ish)."""


def _is_unknown_tool_retry(part: object) -> TypeGuard[ToolReturnPart]:
    """Whether `part` is Pydantic AI's retry for an unknown tool name (by its recorded cause, never by its text)."""
    if not isinstance(part, ToolReturnPart) or part.outcome != 'retried':
        return False
    return getattr(getattr(part, 'retry', None), 'cause', None) == 'unknown_tool'


MAX_REWRITES = 4_096
"""Rewritten retries remembered per proxy (each at most `MAX_MESSAGE_CHARS` of text); past that, the oldest is
forgotten (a part seen again is rewritten afresh)."""


class RetryRewrites:
    """The rewritten copy of each unknown-tool retry part, by the identity of the original part and the run that
    sends it (a copy names the tools of that run's steps, so another run, e.g. another tenant's starting from the
    same transcript objects, gets its own).

    An entry lives as long as its original part (a weak reference drops it), and at most `MAX_REWRITES` entries are
    kept. `made` tells a copy from this cache apart from any other part, by identity: something a model cannot
    forge, whatever it names its tools.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[ToolReturnPart], ToolReturnPart, str | None]] = {}
        self._copies: dict[int, weakref.ref[ToolReturnPart]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def made(self, part: object) -> bool:
        """Whether `part` is a rewritten copy this cache returned."""
        ref = self._copies.get(id(part))
        return ref is not None and ref() is part

    def rewritten(
        self, part: ToolReturnPart, text: Callable[[ToolReturnPart], str], run_id: str | None = None
    ) -> ToolReturnPart:
        """The rewritten copy of `part` for the run `run_id`: the one made earlier for this very object in that run,
        else a new copy with content `text(part)`, remembered (replacing a copy made for another run)."""
        key = id(part)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is part:
            if entry[2] == run_id:
                return entry[1]
            self._copies.pop(id(entry[1]), None)
        new = replace(part, content=text(part))
        while len(self._entries) >= MAX_REWRITES:
            try:
                oldest = next(iter(self._entries))
                _, dropped, _ = self._entries.pop(oldest)
                self._copies.pop(id(dropped), None)
            except (StopIteration, KeyError, RuntimeError):  # emptied or changed by a concurrent drop
                break
        self._entries[key] = (weakref.ref(part, self._dropper(key)), new, run_id)
        self._copies[id(new)] = weakref.ref(new)
        return new

    def _dropper(self, key: int) -> Callable[[weakref.ref[ToolReturnPart]], None]:
        def drop(ref: weakref.ref[ToolReturnPart]) -> None:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is ref:
                self._entries.pop(key, None)
                self._copies.pop(id(entry[1]), None)

        return drop


_REWRITES: weakref.WeakKeyDictionary[ProxyRuntime, RetryRewrites] = weakref.WeakKeyDictionary()


def rewrites_of(runtime: ProxyRuntime) -> RetryRewrites:
    """The `RetryRewrites` of one proxy surface (created on first use, dropped with the runtime)."""
    found = _REWRITES.get(runtime)
    if found is None:
        found = _REWRITES.setdefault(runtime, RetryRewrites())
    return found


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
        head = f'Unknown tool name: {shown_name}. It is not a tool you can call directly: it is a grouped tool. Call {envelopes}.'
    else:
        ranked = _ranked(runtime, directory, name) if directory and len(name) <= 256 else []
        head = f'Unknown tool name: {shown_name}. It is not a tool you can call directly.'
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
    messages: list[ModelMessage],
    runtime: ProxyRuntime,
    directory: Directory,
    visible: Sequence[str],
    run_id: str | None = None,
) -> None:
    """Replace, in the list `messages`, each request holding an unknown-tool retry by a copy whose retries are
    rewritten by `unknown_tool_message`; the message and part objects themselves are never changed.

    `messages` is the request's own list (`ModelRequestContext.messages`, a copy of the run's history list, so
    replacing an item changes what this request sends and nothing else). Every request is scanned, not only the
    latest: a history passed in with `message_history=` holds retries this proxy never saw. A part rewritten in an
    earlier request of the same run (`run_id`) gets the same copy again (`RetryRewrites`); a copy the proxy made is
    sent as it is.
    """
    rewrites = rewrites_of(runtime)

    def text(part: ToolReturnPart) -> str:
        return unknown_tool_message(part.tool_name, runtime, directory, visible)

    for i, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        parts = message.parts
        if not any(_is_unknown_tool_retry(p) and not rewrites.made(p) for p in parts):
            continue
        new_parts: list[Any] = []
        for part in parts:
            if _is_unknown_tool_retry(part) and not rewrites.made(part):
                part = rewrites.rewritten(part, text, run_id)
            new_parts.append(part)
        # The request's metadata is copied too: Pydantic AI may record state on the outgoing request's dict.
        messages[i] = replace(message, parts=new_parts, metadata=copy.deepcopy(message.metadata))
