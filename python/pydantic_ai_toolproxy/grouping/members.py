"""Member registration: a grouped source's tools, renamed to canonical names and withheld from the prompt.

Members keep their metadata and toolset id under canonical names `{group}__{tool}`; a source toolset's
instructions are returned with the tools a search discovers instead of filling every request.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from pydantic_ai.capabilities import WrapperCapability
from pydantic_ai.exceptions import ApprovalRequired, UserError
from pydantic_ai.messages import InstructionPart
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, AgentToolset, ApprovalRequiredToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._interop import interop_for
from .._messages import encodes
from .._private import DynamicToolset
from .member_listing import (
    NO_LISTING,
    Hit,
    ListingKey,
    bound_listings,
    copy_with,
    forget_signature,
    listing_fingerprint,
    state_of,
    unchanged_listing,
)
from .names import SEPARATOR, canonical_name, local_name

__all__ = (
    'Dispatch',
    'GroupMemberToolset',
    'GroupSourceCapability',
    'SurfaceOwner',
    'Unsupported',
    'bad_member_name',
    'dispatch',
    'dispatching',
    'unsupported_member',
    'unsupported_member_reason',
)

UnsupportedKind = Literal['deferred-loading', 'external', 'output', 'provider-native']


def bad_member_name(name: object) -> str | None:
    """None for a usable member name, else the name as shown in the preparation error (repr, cut to 80 chars).

    Usable: a non-empty `str` that encodes as UTF-8 (no lone surrogates: such a name can be neither indexed
    under the same key nor sent to the model as JSON).
    """
    if type(name) is str and name and (name.isascii() or encodes(name)):
        return None
    shown = repr(name)
    return shown if len(shown) <= 80 else shown[:77] + '...'


@dataclass(frozen=True)
class Unsupported:
    """Why a prepared tool cannot be a proxy target: `kind` for code (`toolproxy check` picks its fix by it),
    `text` for people (the clause the preparation error and the check report quote)."""

    kind: UnsupportedKind
    text: str


def unsupported_member(tool_def: ToolDefinition) -> Unsupported | None:
    """Why a prepared tool cannot be a proxy target, or None when it can (the proxy runs local tools only).

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
class Dispatch:
    """The call control's dispatch of one member, running in the current task (`dispatch`): the one value the call
    control (`controls.call.run_call`), the member toolset (`GroupMemberToolset.call_tool`) and the direct-call guard
    (`ToolProxyCapability.before_tool_validate`, through `dispatching`) share.

    A deferral raised once `entered` is True came from the source's `call_tool` (the tool's body, or a wrapper
    toolset inside the source), so its work may have started. One raised before (the tool's kind or
    `requires_approval`, a `prepare` decision, a validate or execute hook of a capability) was declared before
    anything ran.

    Attributes:
        canonical: The canonical name being dispatched: the direct-call guard lets exactly this nested call through.
        entered: Set once the member's source was called for it.
    """

    canonical: str
    entered: bool = False


_current: ContextVar[Dispatch | None] = ContextVar('pydantic_ai_toolproxy.dispatch', default=None)
"""The `Dispatch` running in the current task, else None."""


@contextmanager
def dispatch(canonical: str) -> Iterator[Dispatch]:
    """Mark the member registered as `canonical` as dispatched by the call control in the current task while the
    block runs; yields its `Dispatch`."""
    value = Dispatch(canonical)
    token = _current.set(value)
    try:
        yield value
    finally:
        _current.reset(token)


def dispatching(canonical: str) -> Dispatch | None:
    """The call control's `Dispatch` of the member registered as `canonical` in the current task, else None (a
    model's own direct call of a member, in another task or with another name, finds none)."""
    found = _current.get()
    return found if found is not None and found.canonical == canonical else None


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
    _listings: dict[int, tuple[dict[str, Hit], dict[str, ToolsetTool[AgentDepsT]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Last listings, at most `_MAX_LISTINGS`, keyed by the identity of the toolset owning a listing's first tool (a
    source listing per-run tool sets, e.g. one toolset per tenant, keeps one entry per set): a `Hit` (key of the
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
        key = listing_fingerprint(tools)
        previous, previous_result = listings.get(key, NO_LISTING)
        if cached and len(tools) == len(previous) and unchanged_listing(tools, previous):
            return dict(previous_result)
        result: dict[str, ToolsetTool[AgentDepsT]] = {}
        last_toolset: object = None
        last_id: str | None = None
        renamed: dict[str, Hit] = {}
        for name, tool in tools.items():
            if cached and (hit := previous.get(name)) is not None and hit[0].matches(tool):
                result[hit[1]] = hit[2]
                renamed[name] = hit
                forget_signature(hit[3])
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
            member = copy_with(tool, toolset=self, tool_def=copy_with(tool_def, name=canonical, toolset_id=toolset_id))
            if cached:
                renamed[name] = (ListingKey.of(tool), canonical, member, state_of(member.tool_def))
            else:
                member = interop.mark_member(tool, member, name, self.group, self.description)
            result[canonical] = member
        if cached:
            listings.pop(key, None)  # re-inserted last: the oldest listing goes first
            listings[key] = (renamed, dict(result))
            bound_listings(listings)
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
        running = dispatching(name)
        if running is not None:
            running.entered = True
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
