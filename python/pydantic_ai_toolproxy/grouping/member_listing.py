"""What a member listing keeps between steps: whether a source listed the same tools as last step (`ListingKey`,
`unchanged_listing`), so its members' renamed copies are reused, and the cheap copy that renames them.

A source tool equals last listing's when its class and every field (also those declared `compare=False`, which a
reused member carries to `call_tool`) are the same objects or equal, and its JSON fields (`parameters_json_schema`,
`return_schema`, `metadata`) are `same_value`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any, TypeVar

from pydantic_ai.toolsets.abstract import ToolsetTool

from .._same import same_value

_T = TypeVar('_T')


def copy_with(obj: _T, **changes: Any) -> _T:
    """A shallow copy of a dataclass instance with some fields changed, without re-running `__init__`.

    Equivalent to `dataclasses.replace` for `ToolDefinition`/`ToolsetTool` (plain, non-frozen dataclasses
    without `__post_init__` logic), about five times faster: this runs once per member per step, so at
    100,000 grouped tools it is a measurable share of a step. Cached properties are dropped so that values
    derived from the old fields (e.g. `ToolDefinition.function_signature`) are recomputed.
    """
    state = getattr(obj, '__dict__', None)
    if state is None:  # pragma: no cover - slotted subclasses
        return replace(obj, **changes)  # type: ignore[type-var]
    new = object.__new__(type(obj))
    new_state = new.__dict__
    new_state.update(state)
    new_state.pop('function_signature', None)
    new_state.update(changes)
    return new


def state_of(obj: object) -> dict[str, Any]:
    """`obj.__dict__`, or a fresh empty dict for an object without one (a slotted definition caches nothing there)."""
    state = getattr(obj, '__dict__', None)
    return state if isinstance(state, dict) else {}


_JSON_FIELDS = ('parameters_json_schema', 'return_schema', 'metadata')
"""The definition's JSON-like fields: compared with `same_value` where `==` would hide a change the model sees."""

_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}
"""Per dataclass: the getter of its class and its fields (but `tool_def` and `_JSON_FIELDS`); at most `_MAX_GETTERS`
classes (a source that makes a tool class per run must not grow it without end)."""

_MAX_GETTERS = 256


def _compared(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """The getter of `cls` and of every field of the dataclass `cls` but `tool_def` and `_JSON_FIELDS`: also those
    declared `compare=False`, since a reused member carries them to `call_tool` (a handler, a client).

    Raises:
        TypeError: `cls` is not a dataclass.
    """
    getter = _GETTERS.get(cls)
    if getter is None:
        names = (f.name for f in fields(cls) if f.name != 'tool_def' and f.name not in _JSON_FIELDS)
        if len(_GETTERS) >= _MAX_GETTERS:
            _GETTERS.clear()
        getter = _GETTERS[cls] = attrgetter('__class__', *names)
    return getter


def _never(tool: object) -> tuple[Any, ...]:
    """The getter of a key that matches no tool (see `ListingKey.of`): one item, where that key holds none."""
    return (None,)


@dataclass(slots=True)
class ListingKey:
    """What decides whether a listed source tool equals last listing's: its class and field values.

    `fields` and `def_fields` are tuples read by one `operator.attrgetter` call each and compared in C: the class
    first (so a tool of another class never compares equal), then the fields, of the `ToolsetTool` but `tool_def`,
    and of its `ToolDefinition` but `_JSON_FIELDS`. `json` holds the definition's `_JSON_FIELDS`,
    held to `same_value` where they are not the same objects, since `==` would hide a change the model or a hook
    sees (`1` vs `True`, key order). A `FunctionToolset` lists a fresh `ToolsetTool` with a fresh `ToolDefinition`
    every time (their fields mostly the same objects), so this runs once per member per step: last listing keeps
    its keys and a new listing is read once. Never reads `__dict__`, which would give each fresh instance a dict.
    """

    getter: Callable[[Any], tuple[Any, ...]]
    def_getter: Callable[[Any], tuple[Any, ...]]
    fields: tuple[Any, ...]
    def_fields: tuple[Any, ...]
    json: tuple[Any, Any, Any]

    @staticmethod
    def of(tool: ToolsetTool[Any]) -> ListingKey:
        """The key of a listed tool; a key that matches no tool when one cannot be read (a field declared but not set
        on the instance, a `tool_def` that is not a dataclass): that member is rebuilt every listing."""
        try:
            tool_def = tool.tool_def
            getter, def_getter = _compared(type(tool)), _compared(type(tool_def))
            json = (tool_def.parameters_json_schema, tool_def.return_schema, tool_def.metadata)
            return ListingKey(getter, def_getter, getter(tool), def_getter(tool_def), json)
        except Exception:
            return ListingKey(_never, _never, (), (), (None, None, None))

    def matches(self, tool: ToolsetTool[Any]) -> bool:
        """Whether `tool` equals the tool this key was read from, strictly for its JSON-like fields.

        False when a comparison itself fails (a freshly built circular or very deep schema, an `==` that raises).
        """
        try:
            tool_def = tool.tool_def
            if self.getter(tool) != self.fields or self.def_getter(tool_def) != self.def_fields:
                return False
            schema, returns, metadata = self.json
            new_schema, new_returns, new_metadata = (
                tool_def.parameters_json_schema,
                tool_def.return_schema,
                tool_def.metadata,
            )
            return (
                (schema is new_schema or same_value(schema, new_schema))
                and (returns is new_returns or same_value(returns, new_returns))
                and (metadata is new_metadata or same_value(metadata, new_metadata))
            )
        except Exception:
            return False


_SIGNATURE = 'function_signature'
"""The `ToolDefinition` cached property derived from its schemas: a reused member's is dropped (see `Hit`)."""

Hit = tuple[ListingKey, str, ToolsetTool[Any], dict[str, Any]]
"""Last listing's `(key of the source tool, canonical name, member, the member definition's __dict__)`. A member is
reused while its source tool equals last listing's, and a schema edited in place (the same dict) is equal to itself:
so each reuse drops the member definition's cached `function_signature` from that `__dict__` (a membership test per
member, about 25 ns), and a signature read later follows the schema as it is now."""


_MAX_LISTINGS = 8
"""Most listings a `GroupMemberToolset` keeps (one per tool set its source lists, e.g. per tenant)."""

_MAX_OLDER_LISTED = 50_000
"""Most tools the listings but the newest hold together (their members: about 1 KB a tool)."""


def bound_listings(listings: dict[int, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Keep the newest listing, and older ones while they are fewer than `_MAX_LISTINGS` and hold at most
    `_MAX_OLDER_LISTED` tools together (a source building a fresh toolset every step keeps about one)."""
    try:
        keys = list(listings)
    except RuntimeError:  # another thread changed the dict meanwhile: bound it next time
        return
    held = 0
    for rank, key in enumerate(reversed(keys[:-1]), start=2):
        entry = listings.get(key)
        held += len(entry[0]) if entry is not None else 0
        if rank > _MAX_LISTINGS or held > _MAX_OLDER_LISTED:
            listings.pop(key, None)


NO_LISTING: tuple[dict[str, Any], dict[str, Any]] = ({}, {})


def listing_fingerprint(tools: dict[str, ToolsetTool[Any]]) -> int:
    """Which kept listing a new listing is compared with: the identity of the toolset owning its first tool."""
    for tool in tools.values():
        return id(tool.toolset)
    return 0


def forget_signature(state: dict[str, Any]) -> None:
    if _SIGNATURE in state:
        state.pop(_SIGNATURE, None)


def unchanged_listing(tools: dict[str, ToolsetTool[Any]], previous: dict[str, Hit]) -> bool:
    """Whether a source listed the same names, in the same order, with tools equal to last listing's (dropping the
    cached signatures of the members it checks: `Hit`)."""
    for (name, tool), (previous_name, hit) in zip(tools.items(), previous.items()):
        if name != previous_name or not hit[0].matches(tool):
            return False
        if _SIGNATURE in hit[3]:
            hit[3].pop(_SIGNATURE, None)
    return True


"""Why a tool cannot be a proxy target, as data (`Unsupported.kind`)."""
