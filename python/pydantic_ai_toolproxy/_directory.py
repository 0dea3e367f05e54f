"""The current step's grouped directory, read from `ctx.tool_manager.tools`, and the shared search index.

Spec: "Instructions and dynamic parameters": search returns the current member schema after source
preparation, so unavailable or superseded tools do not remain callable or findable through an old index.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets.abstract import ToolsetTool

from . import _core
from ._members import GroupMemberToolset, SurfaceOwner
from ._names import canonical_name, local_name
from ._same import same_value

__all__ = ('Directory', 'DirectoryCache', 'IndexRecord', 'Member', 'SearchIndexCache', 'index_record')

IndexRecord = tuple[str, str, str, str, object]
"""One record of `_core.SearchIndex.upsert`: `(canonical name, group, local name, description, parameters schema)`."""


def index_record(canonical: str, group: str, description: object, parameters_json_schema: object) -> IndexRecord:
    """The search-index record of the member registered as `canonical` in `group`: the one way records are built
    (`SearchIndexCache.sync`, and the benchmarks that feed `_core.SearchIndex` directly).

    `description` is the tool definition's (a non-str, e.g. None, is indexed as ''); `parameters_json_schema` is
    passed as is (the core extracts its text). The local name is split off with `_names.local_name`, by the group.

    ```python
    from pydantic_ai_toolproxy._directory import index_record

    assert index_record('crm__customer_name', 'crm', None, {}) == ('crm__customer_name', 'crm', 'customer_name', '', {})
    ```
    """
    return (
        canonical,
        group,
        local_name(canonical, group),
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


def _unchanged(old: tuple[str, object, object], group: str, description: object, schema: object) -> bool:
    """Whether a member indexed as `old` (group, description, schema) is still the same for the index.

    `replace()` copies of a ToolDefinition keep the same schema object, so identity answers most steps cheaply; a
    rebuilt schema (a dynamic toolset re-creating its tools) is compared strictly (`same_value`), since a change
    `==` cannot see (`1` vs `True` in an `enum`) changes the indexed text."""
    old_group, old_description, old_schema = old
    if old_group != group or (old_description is not description and old_description != description):
        return False
    try:
        return same_value(old_schema, schema)
    except Exception:  # a circular or very deep rebuilt schema, or a value whose `==` raises: index it again
        return False


class IndexFollower(Protocol):
    """State that follows an index's records (hybrid search's `_vectors.ToolVectors`), told of every change."""

    def follow(self, index: _core.SearchIndex, upserts: Sequence[IndexRecord], removed: Sequence[str]) -> None:
        """`index` just upserted `upserts` and removed the records `removed` (canonical names)."""
        ...

    def forget(self, index: _core.SearchIndex) -> None:
        """`index` is dropped (a reset)."""
        ...


class SearchIndexCache:
    """The documented cache that keeps one Rust `SearchIndex` across steps and runs.

    Synced incrementally to each step's directory: unchanged tools are not re-indexed; changed tools are
    upserted; vanished tools are removed. Sync and ranking happen under one lock with no await in
    between, so a search always ranks exactly the current step's members.
    """

    def __init__(self, descriptions: Mapping[str, str] | None = None) -> None:
        self._descriptions = dict(descriptions or {})
        """Group name -> description, a field of every member of the group (`SearchIndex.set_group_description`)."""
        self.index = self._new_index()
        self.built = False
        """Whether a search has built the index (since the last `reset`); before that, nothing syncs it, so a run
        that never searches builds nothing."""
        self.searched_by: str | None = None
        """`run_id` of the run whose search synced the index last: the steps of that run keep it in sync (`keep_up`)."""
        self._synced: dict[str, tuple[str, object, object]] = {}
        """Per indexed member: its group, description and schema, as last indexed (no tool definition is kept, so
        nothing else a definition references, e.g. run state in its metadata, outlives the step)."""
        self._synced_lists: tuple[list[str], list[object], list[object], list[tuple[int, str]]] = ([], [], [], [])
        self._synced_directory: weakref.ref[Directory] | None = None
        self.lock = threading.Lock()
        self.builds = 0
        """How many syncs changed the index (for tests and benchmarks)."""
        self.vectors: IndexFollower | None = None
        """Hybrid search: told of every upsert and removal (`ToolVectors.follow`), so tool vectors follow the index."""

    def reset(self) -> None:
        """Drop the index and start over with an empty one (after the core raised: its state is not trusted).
        Call with `lock` held; the next `sync` re-indexes the step's members (and re-attaches known vectors)."""
        if self.vectors is not None:
            self.vectors.forget(self.index)
        self.index = self._new_index()
        self.built = False
        self.searched_by = None
        self._synced = {}
        self._synced_lists = ([], [], [], [])
        self._synced_directory = None

    def _new_index(self) -> _core.SearchIndex:
        index = _core.SearchIndex()
        for group, description in self._descriptions.items():
            index.set_group_description(group, description)
        return index

    def keep_up(self, directory: Directory, run_id: str | None) -> None:
        """Sync the index to a new step's `directory` while the step is prepared, so that the step's searches rank
        at once (spec: search returns the current member schemas, so the index follows each step).

        Only in the run that searched last (`searched_by`): concurrent runs whose tools differ (e.g. per-tenant
        sources) would otherwise re-sync the shared index at every step of every run, not only when they search.
        Per-step work, like wrapping and hiding: an unchanged step costs the list comparisons of `sync` (about
        0.5 ms at 100,000 tools), a changed one the incremental upsert. An error of the core drops the index (`reset`)
        without failing the step; the next search rebuilds it.
        """
        if not self.built or run_id is None or run_id != self.searched_by:
            return
        with self.lock:
            try:
                self.sync(directory)
            except RuntimeError:  # a panic in the Rust core (see `_core`): start from a fresh index
                self.reset()

    def sync(self, directory: Directory) -> None:
        """Bring the index to `directory`. Call with `lock` held.

        A new step's directory holds new `ToolsetTool`s even when nothing changed, but unchanged members keep their
        names, groups, description strings and schema objects; comparing the directory's lists of those with the
        last synced ones (identity first, then value, all in C) confirms an unchanged directory without visiting
        members in Python: about 0.5 ms at 100,000 tools against some 40 ms for the member-by-member pass that
        finds what changed.
        """
        if self._synced_directory is not None and self._synced_directory() is directory:
            return
        names_before, descriptions_before, schemas_before, runs_before = self._synced_lists
        lists = (directory.names, directory.descriptions, directory.schemas, directory.group_runs)
        if (
            directory.names == names_before
            and directory.descriptions == descriptions_before
            and directory.group_runs == runs_before
            and _same_schemas(directory.schemas, schemas_before)
        ):
            # Keep this step's objects, so that a source rebuilding equal schemas pays one deep comparison, not one per step.
            self._synced_lists = lists
            self._synced_directory = weakref.ref(directory)
            return
        synced = self._synced
        upserts: list[IndexRecord] = []
        new_synced: dict[str, tuple[str, object, object]] = {}
        for name, tool in directory.tools.items():
            tool_def = tool.tool_def
            group: str = tool.toolset.group  # type: ignore[attr-defined]
            description, schema = tool_def.description, tool_def.parameters_json_schema
            old = synced.get(name)
            if old is None or not _unchanged(old, group, description, schema):
                upserts.append(index_record(name, group, description, schema))
            new_synced[name] = (group, description, schema)
        removed = [name for name in synced if name not in new_synced]
        if removed:
            self.index.remove(removed)
        if upserts:
            self.index.upsert(upserts)
        if removed or upserts:
            self.builds += 1
            if self.vectors is not None:
                self.vectors.follow(self.index, upserts, removed)
        self._synced = new_synced
        self._synced_lists = lists
        self._synced_directory = weakref.ref(directory)
        self.built = True


def _same_schemas(new: list[object], old: list[object]) -> bool:
    """`new == old` for lists of schemas: the same objects (the usual case) are confirmed in C at about a nanosecond
    each. A rebuilt schema equal under `==` but not as JSON (`1` vs `True` in an `enum`) passes: its indexed text
    is renewed at the next change the member-by-member pass sees (`_unchanged` is strict), while pages always show
    the current schema. False when the comparison itself fails (a rebuilt circular schema)."""
    try:
        return bool(new == old)
    except Exception:  # a rebuilt circular schema, or a value whose `==` raises (a numpy array, Decimal('sNaN'))
        return False
