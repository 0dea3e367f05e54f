"""Member registration: a grouped source's tools, renamed to canonical names and withheld from the prompt.

Spec: "Group a Toolset" (canonical names `{group}__{tool}`, metadata and toolset id unchanged) and
"Instructions and dynamic parameters" (source toolset instructions are returned with discovered
tools instead of filling every request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, Literal, Protocol, TypeVar

from pydantic_ai.capabilities import WrapperCapability
from pydantic_ai.exceptions import ApprovalRequired, UserError
from pydantic_ai.messages import InstructionPart
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, AgentToolset, ApprovalRequiredToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ._interop import interop_for
from ._messages import encodes
from ._names import SEPARATOR, canonical_name, local_name
from ._private import DynamicToolset
from ._same import same_value

__all__ = (
    'GroupMemberToolset',
    'GroupSourceCapability',
    'MemberEntry',
    'SurfaceOwner',
    'Unsupported',
    'bad_member_name',
    'member_entry',
    'unsupported_member',
    'unsupported_member_reason',
)

_T = TypeVar('_T')


def _copy_with(obj: _T, **changes: Any) -> _T:
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


def _state_of(obj: object) -> dict[str, Any]:
    """`obj.__dict__`, or a fresh empty dict for an object without one (a slotted definition caches nothing there)."""
    state = getattr(obj, '__dict__', None)
    return state if isinstance(state, dict) else {}


def bad_member_name(name: object) -> str | None:
    """None for a usable member name, else the name as shown in the preparation error (repr, cut to 80 chars).

    Usable: a non-empty `str` that encodes as UTF-8 (no lone surrogates: such a name can be neither indexed
    under the same key nor sent to the model as JSON).
    """
    if type(name) is str and name and (name.isascii() or encodes(name)):
        return None
    shown = repr(name)
    return shown if len(shown) <= 80 else shown[:77] + '...'


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
    """The getter of a key that matches no tool (see `_ListingKey.of`): one item, where that key holds none."""
    return (None,)


@dataclass(slots=True)
class _ListingKey:
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
    def of(tool: ToolsetTool[Any]) -> _ListingKey:
        """The key of a listed tool; a key that matches no tool when one cannot be read (a field declared but not set
        on the instance, a `tool_def` that is not a dataclass): that member is rebuilt every listing."""
        try:
            tool_def = tool.tool_def
            getter, def_getter = _compared(type(tool)), _compared(type(tool_def))
            json = (tool_def.parameters_json_schema, tool_def.return_schema, tool_def.metadata)
            return _ListingKey(getter, def_getter, getter(tool), def_getter(tool_def), json)
        except Exception:
            return _ListingKey(_never, _never, (), (), (None, None, None))

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
"""The `ToolDefinition` cached property derived from its schemas: a reused member's is dropped (see `_Hit`)."""

_Hit = tuple[_ListingKey, str, ToolsetTool[Any], dict[str, Any]]
"""Last listing's `(key of the source tool, canonical name, member, the member definition's __dict__)`. A member is
reused while its source tool equals last listing's, and a schema edited in place (the same dict) is equal to itself:
so each reuse drops the member definition's cached `function_signature` from that `__dict__` (a membership test per
member, about 25 ns), and a signature read later follows the schema as it is now."""


_MAX_LISTINGS = 8
"""Most listings a `GroupMemberToolset` keeps (one per tool set its source lists, e.g. per tenant)."""

_MAX_OLDER_LISTED = 50_000
"""Most tools the listings but the newest hold together (their members: about 1 KB a tool)."""


def _bound(listings: dict[int, tuple[dict[str, Any], dict[str, Any]]]) -> None:
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


_NO_LISTING: tuple[dict[str, Any], dict[str, Any]] = ({}, {})


def _listing_key(tools: dict[str, ToolsetTool[Any]]) -> int:
    """Which kept listing a new listing is compared with: the identity of the toolset owning its first tool."""
    for tool in tools.values():
        return id(tool.toolset)
    return 0


def _forget_signature(state: dict[str, Any]) -> None:
    if _SIGNATURE in state:
        state.pop(_SIGNATURE, None)


def _unchanged_listing(tools: dict[str, ToolsetTool[Any]], previous: dict[str, _Hit]) -> bool:
    """Whether a source listed the same names, in the same order, with tools equal to last listing's (dropping the
    cached signatures of the members it checks: `_Hit`)."""
    for (name, tool), (previous_name, hit) in zip(tools.items(), previous.items()):
        if name != previous_name or not hit[0].matches(tool):
            return False
        if _SIGNATURE in hit[3]:
            hit[3].pop(_SIGNATURE, None)
    return True


UnsupportedKind = Literal['deferred-loading', 'external', 'output', 'provider-native']
"""Why a tool cannot be a proxy target, as data (`Unsupported.kind`)."""


@dataclass(frozen=True)
class Unsupported:
    """Why a prepared tool cannot be a proxy target: `kind` for code (`toolproxy check` picks its fix by it),
    `text` for people (the clause the preparation error and the check report quote)."""

    kind: UnsupportedKind
    text: str


def unsupported_member(tool_def: ToolDefinition) -> Unsupported | None:
    """Why a prepared tool cannot be a proxy target, or None when it can (spec: "Execution, usage, and limitations").

    Supported: local function tools, including locally executed MCP tools and inline approval-gated tools.
    Not supported: deferred-loading tools, provider-native tools and native fallbacks, external/client tools,
    output tools.
    """
    if tool_def.defer_loading:
        return Unsupported(
            'deferred-loading',
            'it has defer_loading=True (proxy discovery and native deferred loading are distinct interfaces)',
        )
    if tool_def.kind == 'external':
        return Unsupported(
            'external', 'it is an external (client-executed) tool, whose result is produced outside the run'
        )
    if tool_def.kind == 'output':
        return Unsupported('output', 'it is an output tool')
    if tool_def.unless_native is not None or tool_def.with_native is not None:
        native = tool_def.unless_native or tool_def.with_native
        return Unsupported(
            'provider-native',
            f'it is tied to the provider-native tool {native!r} (select native=False, local=True on its source)',
        )
    return None


def unsupported_member_reason(tool_def: ToolDefinition) -> str | None:
    """`unsupported_member(tool_def).text`, or None when the tool can be a proxy target."""
    found = unsupported_member(tool_def)
    return found.text if found is not None else None


@dataclass
class MemberEntry:
    """Whether the member the call control is dispatching reached its source (`GroupMemberToolset.call_tool`).

    The call control sets one per dispatch (`member_entry`); a deferral raised once `entered` is True came from the
    source's `call_tool` (the tool's body, or a wrapper toolset inside the source), so its work may have started. One
    raised before (the tool's kind or `requires_approval`, a `prepare` decision, a validate or execute hook of a
    capability) was declared before anything ran.

    Attributes:
        canonical: The canonical name being dispatched.
        entered: Set once the member's source was called for it.
    """

    canonical: str
    entered: bool = False


member_entry: ContextVar[MemberEntry | None] = ContextVar('pydantic_ai_toolproxy.member_entry', default=None)
"""The call control's `MemberEntry` for the dispatch running in the current task, else None."""


class SurfaceOwner(Protocol):
    """What a member needs of the proxy surface that owns it: the owner is also the identity token by which the
    controls tell their own members from other tools (`_runtime.ProxyRuntime` is the implementation)."""

    def group_description(self, group: str) -> str:
        """The configured description of `group` ('' for a group the surface does not have)."""
        ...


@dataclass
class GroupMemberToolset(WrapperToolset[AgentDepsT]):
    """Registers a group's tools under `{group}__{tool}` and withholds the source's instructions.

    Each tool keeps its metadata, validator, retry budget and `toolset_id`; only the name changes.
    `owner` is the runtime of the `ToolProxyCapability` that owns the group (a `SurfaceOwner`): the identity
    token by which the controls tell their own members from any other tool in the current step's `ToolManager`.

    Raises:
        UserError: from `get_tools`, when a tool of the source cannot be a proxy target, naming group and tool.
    """

    group: str = ''
    owner: SurfaceOwner | None = None
    _listings: dict[int, tuple[dict[str, _Hit], dict[str, ToolsetTool[AgentDepsT]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Last listings, at most `_MAX_LISTINGS`, keyed by the identity of the toolset owning a listing's first tool (a
    source listing per-run tool sets, e.g. one toolset per tenant, keeps one entry per set): a `_Hit` (key of the
    source tool, canonical name, member, ...) per source name, and the members it returned. A source tool equal to
    last listing's reuses its member, so an unchanged source allocates nothing per tool per step (at 100,000 members
    the allocations, and the garbage collections they trigger, are most of the wrapping cost); a listing equal to
    the one kept for its key, in the same order, returns a copy of those members. The key only picks the candidate:
    every tool is compared with it (its fields, its toolset included). Each entry is replaced wholesale (one tuple,
    so concurrent runs in threads never see halves of two listings)."""

    @property
    def id(self) -> str | None:
        return self.wrapped.id

    @property
    def _explicit_id(self) -> str | None:
        # Members already carry their source's `toolset_id` (see `get_tools`); a member whose source chose no
        # id must keep `None`, so the agent's `CombinedToolset` must not stamp one from this wrapper.
        return None

    @property
    def description(self) -> str:
        """The group's description, as configured on the owning proxy."""
        return self.owner.group_description(self.group) if self.owner is not None else ''

    @property
    def label(self) -> str:
        return f'ToolProxy group {self.group!r} ({self.wrapped.label})'

    @property
    def tool_name_conflict_hint(self) -> str:
        return (
            f'Grouped tools are registered under their canonical name `{self.group}{SEPARATOR}<tool>`: '
            'rename the other tool, rename the group, or prefix the source before grouping.'
        )

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return self.members_of(await self.wrapped.get_tools(ctx), ctx)

    def members_of(
        self, tools: dict[str, ToolsetTool[AgentDepsT]], ctx: RunContext[AgentDepsT]
    ) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The members for one listing of the source: `tools` renamed to canonical names (this toolset's own work).

        Raises:
            UserError: a tool that cannot be a proxy target, naming group and tool.
        """
        interop = interop_for(ctx)
        cached = not interop.harness_run  # harness members carry run-bound markers: rebuilt every listing
        listings = self._listings
        key = _listing_key(tools)
        previous, previous_result = listings.get(key, _NO_LISTING)
        if cached and len(tools) == len(previous) and _unchanged_listing(tools, previous):
            return dict(previous_result)
        result: dict[str, ToolsetTool[AgentDepsT]] = {}
        last_toolset: object = None
        last_id: str | None = None
        renamed: dict[str, _Hit] = {}
        for name, tool in tools.items():
            if cached and (hit := previous.get(name)) is not None and hit[0].matches(tool):
                result[hit[1]] = hit[2]
                renamed[name] = hit
                _forget_signature(hit[3])
                continue
            tool_def = tool.tool_def
            if (problem := bad_member_name(name)) is not None:
                raise UserError(
                    f'ToolProxy group {self.group!r}: its source listed a tool named {problem}, which cannot be '
                    'called through the proxy. Tool names must be non-empty strings of valid Unicode text; fix or '
                    'filter that tool in the source, or leave the source ungrouped.'
                )
            if (unsupported := unsupported_member(tool_def)) is not None:
                raise UserError(
                    f'Tool {name!r} of ToolProxy group {self.group!r} cannot be grouped: {unsupported.text}. '
                    'Leave that tool ungrouped (install its source directly) instead.'
                )
            toolset_id = tool_def.toolset_id
            if toolset_id is None:
                # The id the agent's CombinedToolset would have stamped had the source been installed directly.
                if tool.toolset is not last_toolset:
                    last_toolset = tool.toolset
                    last_id = getattr(last_toolset, '_explicit_id', None)
                toolset_id = last_id
            canonical = canonical_name(self.group, name)
            member = _copy_with(
                tool, toolset=self, tool_def=_copy_with(tool_def, name=canonical, toolset_id=toolset_id)
            )
            if cached:
                renamed[name] = (_ListingKey.of(tool), canonical, member, _state_of(member.tool_def))
            else:
                member = interop.mark_member(tool, member, name, self.group, self.description)
            result[canonical] = member
        if cached:
            listings.pop(key, None)  # re-inserted last: the oldest listing goes first
            listings[key] = (renamed, dict(result))
            _bound(listings)
        return result

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Call the source's tool under its local name.

        A source wrapped in Pydantic AI's `ApprovalRequiredToolset` (`.approval_required()`, outermost) declares its
        approvals before anything runs: its check is made here, once, and a call it holds raises `ApprovalRequired`
        without the source being entered (the call control then says the tool did not run).

        Raises:
            ApprovalRequired: the outermost `ApprovalRequiredToolset` layers require approval for this call.
        """
        local = local_name(name, self.group)
        ctx = replace(ctx, tool_name=local)
        source = interop_for(ctx).source_tool(tool)
        target = source if source is not None else replace(tool, tool_def=replace(tool.tool_def, name=local))
        toolset: AbstractToolset[AgentDepsT] = self.wrapped
        while type(toolset) is ApprovalRequiredToolset:
            if not ctx.tool_call_approved and toolset.approval_required_func(ctx, target.tool_def, tool_args):
                raise ApprovalRequired
            toolset = toolset.wrapped
        entry = member_entry.get()
        if entry is not None and entry.canonical == name:
            entry.entered = True
        return await toolset.call_tool(local, tool_args, ctx, target)

    async def get_instructions(
        self, ctx: RunContext[AgentDepsT]
    ) -> str | InstructionPart | Sequence[str | InstructionPart] | None:
        """Withhold the source's instructions from the prompt; `source_instructions` returns them to search."""
        return None

    async def source_instructions(self, ctx: RunContext[AgentDepsT]) -> list[str]:
        """The grouped source's own toolset instructions as a list of strings (static and dynamic)."""
        raw = await self.wrapped.get_instructions(ctx)
        if raw is None:
            return []
        items = [raw] if isinstance(raw, (str, InstructionPart)) else list(raw)
        out: list[str] = []
        for item in items:
            text = item.content if isinstance(item, InstructionPart) else item
            if isinstance(text, str) and text.strip():
                out.append(text)
        return out


@dataclass
class GroupSourceCapability(WrapperCapability[AgentDepsT]):
    """Wraps one group's source capability so its toolset lands as group members.

    Everything else (hooks, `for_agent`/`for_run` binding and replacement, capability-level instructions,
    model settings, MCP lifecycle) stays the source's own, through `WrapperCapability` delegation. The
    source's toolset is read only where Pydantic AI reads it (agent construction and per-run re-extraction),
    never at definition time. `owner` is the runtime of the surface the group belongs to (see
    `GroupMemberToolset`); hosts get one from `ToolProxyCapability.group_source`.
    """

    group: str = ''
    owner: SurfaceOwner | None = None

    def get_toolset(self) -> AgentToolset[AgentDepsT] | None:
        toolset = self.wrapped.get_toolset()
        if toolset is None:
            return None
        if not isinstance(toolset, AbstractToolset):
            toolset = DynamicToolset[AgentDepsT](toolset_func=toolset)
        return GroupMemberToolset(wrapped=toolset, group=self.group, owner=self.owner)

    def get_native_tools(self) -> Sequence[Any]:
        native = self.wrapped.get_native_tools()
        if native:
            raise UserError(
                f'The source of ToolProxy group {self.group!r} contributes provider-native tools '
                f'({", ".join(type(t).__name__ for t in native)}), which cannot be proxy targets. '
                'Select native=False, local=True on that source, or leave it ungrouped.'
            )
        return native
