"""The current step's grouped directory, read from `ctx.tool_manager.tools`, and the shared search index.

Search returns each member's current schema after source preparation, so a tool that became unavailable or was
superseded is neither callable nor findable through an old directory or index.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets.abstract import ToolsetTool

from .. import _core
from .members import GroupMemberToolset, SurfaceOwner
from .names import canonical_name, local_name

__all__ = ('Directory', 'DirectoryCache', 'IndexRecord', 'Member', 'index_record')

IndexRecord = tuple[str, str, str, str, object]
"""One record of `_core.SearchIndex.upsert`: `(canonical name, group, local name, description, parameters schema)`."""


def index_record(canonical: str, group: str, description: object, parameters_json_schema: object) -> IndexRecord:
    """The search-index record of the member registered as `canonical` in `group`: the one way records are built
    (`search.index_cache.IndexSlot.sync`, for the search control and the `ToolSearch` strategy alike, and the benchmarks
    that feed `_core.SearchIndex` directly).

    `description` is the tool definition's (a non-str, e.g. None, is indexed as ''); `parameters_json_schema` is
    passed as is (the core extracts its text). The local name is split off with `grouping.names.local_name`, by the group;
    group '' (the strategy's deferred tools, which have no group, `search.strategy.GROUP`) keeps the whole name.

    ```python
    from pydantic_ai_toolproxy.grouping.directory import index_record

    assert index_record('crm__customer_name', 'crm', None, {}) == ('crm__customer_name', 'crm', 'customer_name', '', {})
    assert index_record('get_weather', '', 'Weather.', {}) == ('get_weather', '', 'get_weather', 'Weather.', {})
    ```
    """
    return (
        canonical,
        group,
        local_name(canonical, group) if group else canonical,
        description if isinstance(description, str) else '',
        parameters_json_schema,
    )


@dataclass(frozen=True)
class Member:
    """One grouped tool as prepared for the current step."""

    group: str
    local_name: str
    canonical: str
    tool: ToolsetTool[Any]
    toolset: GroupMemberToolset[Any]

    @property
    def tool_def(self) -> ToolDefinition:
        return self.tool.tool_def


@dataclass
class Directory:
    """The grouped members of one run step, keyed by canonical name, in the order the `ToolManager` lists them.

    `tools` holds the members' prepared `ToolsetTool`s; `Member` views are made on demand, so building a
    directory of 100,000 members is one pass over the step's tools. `groups` keeps only groups with at least
    one surviving member, in the configured order.

    Taken in the same pass, for `SearchIndexCache.sync` to confirm that nothing it indexed changed without
    visiting every member again: `names` (the keys of `tools`), `descriptions` and `schemas` (each member's
    `tool_def.description` and `tool_def.parameters_json_schema`), in the order of `tools`, and `group_runs`,
    `(position, group)` wherever the owning group changes along that order (one entry per group when a group's
    members are listed together).
    """

    tools: dict[str, ToolsetTool[Any]]
    groups: list[str]
    group_toolsets: dict[str, GroupMemberToolset[Any]] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    descriptions: list[object] = field(default_factory=list)
    schemas: list[object] = field(default_factory=list)
    group_runs: list[tuple[int, str]] = field(default_factory=list)
    foreign_toolsets: list[object] = field(default_factory=list)
    """The distinct toolsets owning the step's other tools (not this proxy's members), in listing order: a few per
    step, which the capability checks for a wrapper that re-owns the proxy's tools."""
    _fingerprints: tuple[bytes, int] | None = field(default=None, repr=False, compare=False)
    _member_key: int | None = field(default=None, repr=False, compare=False)

    def fingerprints(self) -> tuple[bytes, int]:
        """`(fingerprints, unfingerprintable)` of `schemas`, computed once per directory: `8 * len(schemas)` bytes,
        one little-endian 64-bit fingerprint of each schema's content as it is now (`_core.schema_fingerprints`: the
        indexed text of a schema edited in place changes its fingerprint, the dict staying the same object), 0 for a
        schema holding a value of another type than dict, list, tuple, str, int, float, bool and None (or more than
        `_core.MAX_FINGERPRINT_NODES` nodes), and how many are 0 (the cost: docs/performance.md, "In-process figures")."""
        if self._fingerprints is None:
            self._fingerprints = _core.schema_fingerprints(self.schemas)
        return self._fingerprints

    def member_key(self) -> int:
        """A hash of this directory's member set (names, groups, descriptions; not schemas, whose contents cost a walk):
        `SearchIndexCache` keeps one index per key. Equal directories have equal keys; a collision, or two member
        sets differing only in their schemas, only picks an index that the sync then brings up to date."""
        if self._member_key is None:
            try:
                descriptions = hash(tuple(self.descriptions))
            except Exception:  # a description object that is not hashable: the other parts still tell sets apart
                descriptions = 0
            self._member_key = hash((tuple(self.names), tuple(self.group_runs), descriptions))
        return self._member_key

    @classmethod
    def from_tools(
        cls, tools: Mapping[str, ToolsetTool[Any]], owner: SurfaceOwner, group_order: Sequence[str]
    ) -> Directory:
        """The directory of one step's prepared `tools` (name -> tool): the members whose toolset `owner` owns,
        `groups` in `group_order` (only groups with members), and the other tools' toolsets."""
        members: dict[str, ToolsetTool[Any]] = {}
        group_toolsets: dict[str, GroupMemberToolset[Any]] = {}
        names: list[str] = []
        descriptions: list[object] = []
        schemas: list[object] = []
        group_runs: list[tuple[int, str]] = []
        add_name, add_description, add_schema = names.append, descriptions.append, schemas.append
        last: object = None
        last_group: str | None = None
        foreign: list[object] = []
        last_foreign: object = None
        for name, tool in tools.items():
            toolset = tool.toolset
            if toolset is not last:
                if not isinstance(toolset, GroupMemberToolset) or toolset.owner is not owner:
                    if toolset is not last_foreign:
                        last_foreign = toolset
                        if not any(toolset is seen for seen in foreign):
                            foreign.append(toolset)
                    continue
                group_toolsets.setdefault(toolset.group, toolset)
                last = toolset
                if toolset.group != last_group:
                    last_group = toolset.group
                    group_runs.append((len(names), last_group))
            members[name] = tool
            add_name(name)
            tool_def = tool.tool_def
            add_description(tool_def.description)
            add_schema(tool_def.parameters_json_schema)
        groups = [g for g in group_order if g in group_toolsets]
        return cls(members, groups, group_toolsets, names, descriptions, schemas, group_runs, foreign)

    def __contains__(self, canonical: str) -> bool:
        return canonical in self.tools

    def __len__(self) -> int:
        return len(self.tools)

    def member(self, canonical: str) -> Member | None:
        """The member registered as `canonical` in this step, or None."""
        tool = self.tools.get(canonical)
        if tool is None:
            return None
        toolset: GroupMemberToolset[Any] = tool.toolset  # type: ignore[assignment]
        group = toolset.group
        return Member(group, local_name(canonical, group), canonical, tool, toolset)

    def member_of(self, group: str, tool: str) -> Member | None:
        """The member that is tool `tool` of group `group` in this step, or None. Only the exact pair counts: group
        `ops` + tool `_purge` never finds group `ops_`'s `purge`, though both spell `ops___purge`."""
        member = self.member(canonical_name(group, tool))
        if member is None or member.group != group or member.local_name != tool:
            return None
        return member

    def local_names(self, group: str) -> list[str]:
        """The local names of `group`'s members (owned by that group: not another group's whose name extends it)."""
        return [
            local_name(name, group)
            for name, tool in self.tools.items()
            if tool.toolset.group == group  # type: ignore[attr-defined]
        ]


class DirectoryCache:
    """Computes a step's `Directory` once per `ToolManager` (the step's prepared tool set).

    Holds at most `size` entries, keyed by the manager's identity and checked through a weak reference; an
    entry whose manager is gone is dropped at the next insertion, so a finished step's tools are not kept alive.
    """

    def __init__(self, owner: SurfaceOwner, group_order: Sequence[str], size: int = 64) -> None:
        self._owner = owner
        self._group_order = group_order
        self._size = size
        self._entries: dict[int, tuple[weakref.ref[Any], int, Directory]] = {}
        self._lock = threading.Lock()

    def get(self, ctx: RunContext[Any]) -> Directory:
        manager = ctx.tool_manager
        tools = manager.tools if manager is not None else None
        if manager is None or tools is None:
            return Directory(tools={}, groups=[])
        key = id(manager)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0]() is manager and hit[1] == id(tools):
                return hit[2]
        directory = Directory.from_tools(tools, self._owner, self._group_order)
        entries = self._entries

        def forget(ref: weakref.ref[Any], key: int = key) -> None:
            # The step's manager is gone: drop its directory now, so the step's tools are freed with the manager
            # (a Directory references every member tool of its step). A plain dict operation, safe from any thread.
            entry = entries.get(key)
            if entry is not None and entry[0] is ref:
                entries.pop(key, None)

        with self._lock:
            # `forget` may drop entries at any moment (even during a garbage collection this thread triggers), so
            # these loops walk a snapshot. Entries whose manager is gone are normally dropped by `forget` already.
            snapshot = entries.copy()
            for k, (ref, _, _) in snapshot.items():
                if ref() is None:
                    entries.pop(k, None)
            if len(entries) >= self._size:
                for oldest in snapshot:
                    if entries.pop(oldest, None) is not None:
                        break
            entries[key] = (weakref.ref(manager, forget), id(tools), directory)
        return directory
