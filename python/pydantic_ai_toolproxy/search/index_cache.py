"""The search indexes shared by every run of one proxy: `IndexSlot` (one Rust `SearchIndex` and `IndexSlot.sync`,
the one sync of an index, which the `ToolSearch` strategy's index uses too) and `SearchIndexCache` (a bounded set of
slots, one per member set in use).

Search ranks the current step's members as prepared (after sources, `prepare_tools` and capability hooks) and returns
their current schemas, so a tool that became unavailable or was superseded is never found through an old index (the
index follows each step). Runs whose sources list
different members (one catalogue per tenant, from the run's deps) each keep their own index, so interleaved runs do
not re-index at every search.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Protocol

from .. import _core
from ..grouping.directory import Directory, IndexRecord, index_record

__all__ = ('MAX_INDEXED_TOOLS', 'MAX_INDEXES', 'IndexFollower', 'IndexSlot', 'IndexedTools', 'SearchIndexCache')

MAX_INDEXES = 8
"""Most indexes one proxy keeps (distinct member sets searched, e.g. tenants); the least recently searched goes."""

MAX_INDEXED_TOOLS = 200_000
"""Most records all of a proxy's indexes hold together (memory per record: docs/usage.md); past it the least recently
searched indexes go, never the one in use."""

_SAMPLE = 64
"""Names of a directory looked up in an index to estimate how much of it the index already holds."""


class IndexedTools(Protocol):
    """The tools one index is synced to (`IndexSlot.sync`), as parallel lists in listing order: a step's `Directory`
    (the search control, unknown-name retries), or the `ToolSearch` strategy's deferred tools (`search.strategy.ToolList`).
    Weak-referenceable: a slot remembers the listing it synced last."""

    names: list[str]
    """Each tool's name as indexed (the canonical name of a member), each once."""
    descriptions: list[object]
    """Each tool's `tool_def.description` (a non-str indexes as '')."""
    schemas: list[object]
    """Each tool's `tool_def.parameters_json_schema`, the host's own object."""
    group_runs: list[tuple[int, str]]
    """`(position, group)` wherever the group changes along `names`, the first at position 0."""

    def fingerprints(self) -> tuple[bytes, int]:
        """`_core.schema_fingerprints(schemas)`, computed once per listing (see `Directory.fingerprints`)."""
        ...


class IndexFollower(Protocol):
    """State that follows the records of every index (hybrid search's `hybrid.vectors.ToolVectors`), told of each change."""

    def follow(self, index: _core.SearchIndex, upserts: Sequence[IndexRecord], removed: Sequence[str]) -> None:
        """`index` just upserted `upserts` and removed the records `removed` (canonical names)."""
        ...

    def forget(self, index: _core.SearchIndex) -> None:
        """`index` is dropped (a reset, or its slot evicted)."""
        ...


class IndexSlot:
    """One Rust `SearchIndex` and the state that syncs it to a listing of tools (`IndexedTools`: a step's `Directory`,
    or the `ToolSearch` strategy's deferred tools): the one object per index (state that follows an index, such as
    vectors attached to its records, belongs here).

    Synced incrementally: unchanged tools are not re-indexed; changed tools are upserted; vanished tools are removed.
    Per indexed tool it keeps the group, the description and the fingerprint of the schema as indexed
    (`Directory.fingerprints`), never the host's schema dict, so a schema edited in place is indexed again.
    """

    def __init__(self, descriptions: Mapping[str, str], follower: IndexFollower | None = None) -> None:
        self._descriptions = descriptions
        self.follower = follower
        """Told of every upsert and removal of this index, and of its reset (tool vectors follow the records)."""
        self.index = self._new_index()
        self.built = False
        """Whether a sync has filled the index (since the last `reset`)."""
        self.key: int | None = None
        """`Directory.member_key` of the directory last synced, set by `SearchIndexCache` (None before the first sync)."""
        self.searched_by: str | None = None
        """`run_id` of the run whose search used this index last: that run's steps keep it in sync (`keep_up`)."""
        self.displaced: int | None = None
        """The key this index held before a sync to another member set replaced it (see `SearchIndexCache.sync`)."""
        self.used = 0
        """When the index was last searched, in `SearchIndexCache` ticks (for least-recently-used eviction)."""
        self.builds = 0
        """How many syncs changed the index (for tests and benchmarks)."""
        self.upserted = 0
        """How many records those syncs (re-)indexed in all (for tests and benchmarks)."""
        self._synced: dict[str, tuple[str, object, int]] = {}
        """Per indexed member: its group, description and schema fingerprint (0: not fingerprintable, indexed again at
        every sync), as last indexed. No tool definition or schema is kept, so nothing a definition references
        outlives the step."""
        self._synced_lists: tuple[list[str], list[object], list[object], list[tuple[int, str]]] = ([], [], [], [])
        """The last synced directory's names, descriptions, schema objects and group runs (`Directory`)."""
        self._prints = b''
        """The fingerprints of the schemas as indexed, in the order of `_synced_lists` (`Directory.fingerprints`)."""
        self._synced_directory: weakref.ref[IndexedTools] | None = None
        """The directory synced last (its lists compared)."""
        self._verified: weakref.ref[IndexedTools] | None = None
        """The directory synced last with its schema contents compared too (see `sync`)."""

    def __len__(self) -> int:
        """How many records the index holds."""
        return len(self._synced)

    def holds(self, name: str) -> bool:
        """Whether the index holds the member registered as `name`."""
        return name in self._synced

    def reset(self) -> None:
        """Drop the index and start over with an empty one (after the core raised: its state is not trusted); the next
        `sync` re-indexes the step's members (and the follower re-attaches the vectors it knows)."""
        if self.follower is not None:
            self.follower.forget(self.index)
        self.index = self._new_index()
        self.built = False
        self.key = None
        self._synced = {}
        self._synced_lists = ([], [], [], [])
        self._prints = b''
        self._synced_directory = self._verified = None

    def _new_index(self) -> _core.SearchIndex:
        index = _core.SearchIndex()
        for group, description in self._descriptions.items():
            index.set_group_description(group, description)
        return index

    def sync(self, tools: IndexedTools, *, verify: bool = True) -> None:
        """Bring the index to `tools` (a step's `Directory`, or the `ToolSearch` strategy's `search.strategy.ToolList`): the
        one index sync, for the search control, unknown-name retries and the strategy alike. Call with the lock that
        guards this slot held.

        A new step's directory holds new `ToolsetTool`s even when nothing changed, but unchanged members keep their
        names, groups, description strings and schema objects; comparing the lists of those with the last synced
        ones, all in C, confirms unchanged tools without visiting them in Python (its cost: docs/performance.md). A
        schema edited in place is the same object with other contents, so with `verify` (a search is about to rank)
        the schemas' fingerprints (`IndexedTools.fingerprints`, once per listing) are compared with those indexed
        too. Without it (`SearchIndexCache.keep_up`, every step) only the lists are compared, and the step's first
        search verifies. A member-by-member pass finds what changed otherwise, and upserts the records of the
        changed tools, built by `grouping.directory.index_record` (the one record builder).

        Raises:
            RuntimeError: the core panicked (call `reset`).
        """
        if self._verified is not None and self._verified() is tools:
            return
        if not verify and self._synced_directory is not None and self._synced_directory() is tools:
            return
        lists = (tools.names, tools.descriptions, tools.schemas, tools.group_runs)
        if self.matches(tools):
            if not verify:
                self.adopt(tools)
                return
            fingerprints, unfingerprintable = tools.fingerprints()
            if not unfingerprintable and fingerprints == self._prints:
                self._synced_lists = lists
                self._synced_directory = self._verified = weakref.ref(tools)
                return
        fingerprints, _ = tools.fingerprints()
        synced = self._synced
        upserts: list[IndexRecord] = []
        new_synced: dict[str, tuple[str, object, int]] = {}
        prints = memoryview(fingerprints).cast('Q').tolist() if fingerprints else []
        groups = _groups_along(tools.group_runs, len(tools.names))
        for name, group, description, schema, fingerprint in zip(
            tools.names, groups, tools.descriptions, tools.schemas, prints
        ):
            old = synced.get(name)
            if (
                old is None
                or fingerprint == 0
                or old[2] != fingerprint
                or old[0] != group
                or not _same_description(old[1], description)
            ):
                upserts.append(index_record(name, group, description, schema))
            new_synced[name] = (group, description, fingerprint)
        removed = [name for name in synced if name not in new_synced]
        if removed:
            self.index.remove(removed)
        if upserts:
            self.index.upsert(upserts)
        if removed or upserts:
            self.builds += 1
            self.upserted += len(upserts)
            if self.follower is not None:
                self.follower.follow(self.index, upserts, removed)
        self._synced = new_synced
        self._synced_lists = lists
        self._prints = fingerprints
        self._synced_directory = self._verified = weakref.ref(tools)
        self.built = True

    def matches(self, directory: IndexedTools) -> bool:
        """Whether `directory` lists what was synced last: the same names, groups, descriptions and schema objects (in
        C; schema contents are not compared, see `sync`)."""
        names_before, descriptions_before, schemas_before, runs_before = self._synced_lists
        return (
            directory.names == names_before
            and directory.group_runs == runs_before
            and _same_descriptions(directory.descriptions, descriptions_before)
            and _same_schemas(directory.schemas, schemas_before)
        )

    def adopt(self, directory: IndexedTools) -> None:
        """Record `directory` as synced, when `matches(directory)`: keep its lists, so that a source rebuilding equal
        schemas pays one deep comparison, not one per step."""
        self._synced_lists = (directory.names, directory.descriptions, directory.schemas, directory.group_runs)
        self._synced_directory = weakref.ref(directory)

    def overlap(self, directory: Directory) -> float:
        """The share (0..1) of `directory`'s members this index holds, estimated from up to 64 evenly spaced names."""
        names = directory.names
        if not names or not self._synced:
            return 0.0
        step = max(1, len(names) // _SAMPLE)
        sample = names[::step]
        return sum(name in self._synced for name in sample) / len(sample)


def _groups_along(runs: list[tuple[int, str]], count: int) -> list[str]:
    """The group of each of `count` tools whose group runs are `runs` (`IndexedTools.group_runs`)."""
    groups: list[str] = []
    ends = [position for position, _ in runs[1:]]
    ends.append(count)
    for (start, group), end in zip(runs, ends):
        groups += repeat(group, end - start)
    return groups


def _same_description(old: object, new: object) -> bool:
    """Whether a description indexed as `old` is still `new` for the index (a non-str indexes as '')."""
    if old is new:
        return True
    try:
        return type(old) is type(new) and bool(old == new)
    except Exception:  # a non-str description whose `==` raises: index it again
        return False


def _same_schemas(new: list[object], old: list[object]) -> bool:
    """`new == old` for lists of schemas: the same objects (the usual case) are confirmed in C by identity, without
    comparing their contents. A rebuilt schema equal under `==` but not as JSON (`1` vs `True` in an `enum`), or one edited in place,
    passes: the fingerprints that `IndexSlot.sync` compares before a search tell. False when the comparison itself
    fails (a rebuilt circular schema)."""
    try:
        return bool(new == old)
    except Exception:  # a rebuilt circular schema, or a value whose `==` raises (a numpy array, Decimal('sNaN'))
        return False


def _same_descriptions(new: list[object], old: list[object]) -> bool:
    """`new == old` for lists of descriptions (str or None, the same objects in the usual case), False when `==` fails."""
    try:
        return bool(new == old)
    except Exception:
        return False


class SearchIndexCache:
    """The indexes of one proxy, shared by all its runs: at most `max_indexes` `IndexSlot`s holding at most
    `max_tools` records together (defaults `MAX_INDEXES`, `MAX_INDEXED_TOOLS`).

    Each search syncs and ranks one slot under `lock`, with no await in between, so a search always ranks exactly the
    current step's members. The slot is chosen by the step's directory (`sync`):

    1. the slot already synced to this member set (`Directory.member_key`): nothing to re-index;
    2. else the slot this run searched last (its tools changed during the run): an incremental sync;
    3. else, while there is room, a new slot, unless an existing slot holds most of these members (a catalogue that
       grew or shrank between runs): that one is synced incrementally, unless its previous member set was itself
       pushed out by this one recently, which means both are in use (interleaved tenants): then the new set gets its
       own slot;
    4. else the least recently searched slot, synced incrementally.

    So concurrent runs with different member sets (one catalogue per tenant) each keep an index, and a single
    catalogue changing over time keeps one index, updated by its differences. After a sync, the least recently
    searched other slots go while the records of all slots exceed `max_tools`.
    """

    def __init__(
        self,
        descriptions: Mapping[str, str] | None = None,
        *,
        max_indexes: int = MAX_INDEXES,
        max_tools: int = MAX_INDEXED_TOOLS,
    ) -> None:
        self._descriptions = dict(descriptions or {})
        """Group name -> description, a field of every member of the group (`SearchIndex.set_group_description`)."""
        self.max_indexes = max(1, max_indexes)
        self.max_tools = max_tools
        self._follower: IndexFollower | None = None
        self.slots: list[IndexSlot] = [IndexSlot(self._descriptions)]
        """The slots, at least one; `current` is the one the last `sync` chose."""
        self.current = self.slots[0]
        self.lock = threading.Lock()
        self._tick = 0
        self._dropped_builds = 0

    def redescribe(self, group: str, description: str) -> None:
        """Index `group` with `description` from now on: every slot starts over (its next sync indexes the step's
        members again). Call with `lock` held."""
        self._descriptions[group] = description
        for slot in self.slots:
            slot.reset()

    @property
    def vectors(self) -> IndexFollower | None:
        """What follows every slot's records (hybrid search's tool vectors), or None; set it before the first sync."""
        return self._follower

    @vectors.setter
    def vectors(self, follower: IndexFollower | None) -> None:
        self._follower = follower
        for slot in self.slots:
            slot.follower = follower

    # --- the current slot (the one the last sync chose), as one index ---

    @property
    def index(self) -> _core.SearchIndex:
        """The index of the slot the last `sync` chose (what a search ranks and `explain` reads)."""
        return self.current.index

    @index.setter
    def index(self, index: _core.SearchIndex) -> None:
        self.current.index = index

    @property
    def searched_by(self) -> str | None:
        """`run_id` of the run whose search used the current slot last."""
        return self.current.searched_by

    @searched_by.setter
    def searched_by(self, run_id: str | None) -> None:
        self.current.searched_by = run_id

    @property
    def built(self) -> bool:
        """Whether any search has built an index (a run that never searches builds nothing)."""
        return any(slot.built for slot in self.slots)

    @property
    def builds(self) -> int:
        """How many syncs changed an index, over all slots (dropped ones included): for tests and benchmarks."""
        return self._dropped_builds + sum(slot.builds for slot in self.slots)

    def reset(self) -> None:
        """Drop the current slot's index (after the core raised). Call with `lock` held."""
        self.current.reset()

    def reset_all(self) -> None:
        """Drop every slot's index (the embedding model changed: vectors of another model must not stay attached);
        the next `sync` of each re-indexes its members. Call with `lock` held."""
        for slot in self.slots:
            slot.reset()

    # --- syncing ---

    def keep_up(self, directory: Directory, run_id: str | None) -> None:
        """Sync the slot `run_id` searched last to a new step's `directory` while the step is prepared, so that the
        step's searches rank at once (search returns the current member schemas, so the index follows each step).

        Only the run that searched a slot last keeps it up: concurrent runs whose tools differ would otherwise re-sync
        indexes at every step of every run, not only when they search. Per-step work, like wrapping and hiding: an
        unchanged step costs the list comparisons of `IndexSlot.sync` (schemas edited in place are found by the step's
        first search), a changed one the incremental upsert. An error of the core drops that index without failing the step; the next search rebuilds it.
        """
        if run_id is None:
            return
        with self.lock:
            slot = next((s for s in self.slots if s.searched_by == run_id and s.built), None)
            if slot is None:
                return
            if slot.matches(directory):
                slot.adopt(directory)
                return
            # The run's tools changed: to a member set another index already holds, that one follows the run.
            key = directory.member_key()
            other = next((s for s in self.slots if s.key == key and s is not slot and s.built), None)
            if other is not None:
                slot.searched_by, other.searched_by = None, run_id
                slot = other
            try:
                slot.sync(directory, verify=False)
            except RuntimeError:  # a panic in the Rust core (see `_core`): start from a fresh index
                slot.reset()
                return
            slot.key = key

    def sync(self, directory: Directory, run_id: str | None = None) -> None:
        """Choose the slot for `directory` (see the class docs), sync it, and make it `current`; `run_id` (the searching
        run) marks the slot as searched by it. Call with `lock` held.

        Raises:
            RuntimeError: the core panicked (call `reset`: it drops the current slot's index).
        """
        slot = self._choose(directory, run_id)
        self.current = slot
        self._tick += 1
        slot.used = self._tick
        key_before = slot.key
        slot.sync(directory)
        slot.key = directory.member_key()
        if key_before is not None and key_before != slot.key:
            slot.displaced = key_before
        if run_id is not None:
            for other in self.slots:
                if other.searched_by == run_id and other is not slot:
                    other.searched_by = None  # a run keeps up only the index it searched last
            slot.searched_by = run_id
        self._evict(keep=slot)

    def _choose(self, directory: Directory, run_id: str | None) -> IndexSlot:
        slots = self.slots
        for slot in slots:
            ref = slot._synced_directory
            if ref is not None and ref() is directory:
                return slot
        key = directory.member_key()
        for slot in slots:
            if slot.key == key:
                return slot
        if run_id is not None:
            for slot in slots:
                if slot.searched_by == run_id:
                    return slot
        for slot in slots:
            if not slot.built:
                return slot
        displaced = any(slot.displaced == key for slot in slots)
        if len(slots) < self.max_indexes:
            closest = max(slots, key=lambda s: s.overlap(directory))
            if displaced or closest.overlap(directory) < 0.5:
                fresh = IndexSlot(self._descriptions, self._follower)
                slots.append(fresh)
                return fresh
            return closest
        return min(slots, key=lambda s: s.used)

    def _evict(self, keep: IndexSlot) -> None:
        """Drop the least recently searched slots but `keep` while all slots hold more than `max_tools` records, or
        while there are more than `max_indexes`."""
        slots = self.slots
        while len(slots) > 1 and (len(slots) > self.max_indexes or sum(map(len, slots)) > self.max_tools):
            oldest = min((s for s in slots if s is not keep), key=lambda s: s.used)
            slots.remove(oldest)
            self._dropped_builds += oldest.builds
            if oldest.follower is not None:
                oldest.follower.forget(oldest.index)
