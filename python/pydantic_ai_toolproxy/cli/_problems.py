"""The problems `toolproxy check` reports, each with the tool it concerns and the fix.

Errors would fail at runtime (the capability refuses to prepare, or a search fails); warnings misbehave
(a tool search cannot rank well, or cannot find by its own name).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from .. import _core
from ..grouping.members import Unsupported

__all__ = (
    'Problem',
    'blank_description',
    'canonical_collision',
    'control_collision',
    'duplicate',
    'not_first',
    'oversized',
    'preparation',
    'server_start',
    'unsupported',
)

Kind = Literal[
    'oversized',
    'unsupported',
    'duplicate-name',
    'name-collision',
    'control-collision',
    'preparation',
    'blank-description',
    'not-first',
    'server-start',
]


@dataclass(frozen=True)
class Problem:
    """One finding.

    Attributes:
        severity: `error` (would fail at runtime) or `warning` (misbehaves).
        kind: What is wrong (see `Kind`).
        group: The group concerned, if any.
        tool: The tool's local name (or a direct tool's name), if one tool is concerned.
        message: What is wrong, with figures (sizes in bytes).
        fix: What to change.
        size: The search entry's size in bytes, for `oversized`.
    """

    severity: Literal['error', 'warning']
    kind: Kind
    group: str | None
    tool: str | None
    message: str
    fix: str
    size: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The problem as a JSON object (the fields above)."""
        return asdict(self)

    @property
    def where(self) -> str:
        """`group/tool`, `group`, `tool` or `-`."""
        if self.group and self.tool:
            return f'{self.group}/{self.tool}'
        return self.group or self.tool or '-'


def oversized(group: str, tool: str, size: int, instructions: int | None, budget: int, members: int) -> Problem:
    """Error: the entry of `tool` is `size` bytes and cannot fit a page of `budget` bytes; `instructions` is the
    share of the group's source instructions when they are the cause (the entry would fit without them).

    `members` is the number of grouped tools: the largest `total` a search can report, which with the
    largest `next_offset` makes the largest page frame; the budget that frame needs around the entry is the fix."""
    total = max(members, 1)
    count, _, need = _core.plan_page([size], total, max(total - 2, 0), _core.MAX_SEARCH_BYTES)
    raise_budget = (
        f', or raise max_search_bytes to at least {need:,}'
        if count
        else f' (it cannot fit even the largest budget, {_core.MAX_SEARCH_BYTES:,} bytes)'
    )
    if instructions is not None:
        return Problem(
            'error',
            'oversized',
            group,
            tool,
            f'its search entry is {size:,} bytes, {instructions:,} of them the source instructions of group {group!r} '
            f'that every entry of the group carries; max_search_bytes is {budget:,}, so every search that reaches '
            "the group's tools fails",
            f"shorten the instructions of the group's source{raise_budget}",
            size=size,
        )
    return Problem(
        'error',
        'oversized',
        group,
        tool,
        f'its search entry is {size:,} bytes; max_search_bytes is {budget:,}, so every search that reaches it fails',
        f'expose it directly (leave it ungrouped) or shorten its description and parameter schema{raise_budget}',
        size=size,
    )


def unsupported(group: str, tool: str, reason: Unsupported) -> Problem:
    """Error: a member the proxy cannot target; `reason` is `grouping.members.unsupported_member`'s (the fix is chosen
    by its `kind`, the message quotes its `text`)."""
    fix = (
        'select native=False, local=True on its source, or leave the source ungrouped'
        if reason.kind == 'provider-native'
        else 'leave it ungrouped: install it directly, and group the rest of its source (e.g. with `.filtered(...)`)'
    )
    return Problem('error', 'unsupported', group, tool, f'it cannot be a proxy target: {reason.text}', fix)


def blank_description(group: str | None, tool: str) -> Problem:
    """Warning: a tool without a description."""
    return Problem(
        'warning',
        'blank-description',
        group,
        tool,
        'it has no description, so search can only match its name and parameters and the model cannot tell what it does',
        'give it a description (a docstring, `description=`, or the MCP tool description)',
    )


def not_first(group: str, tool: str, first: str | None, detail: str = '') -> Problem:
    """Warning: a search for the tool's own name in its group ranks `first` (None: nothing) ahead of it."""
    found = f'returns {first!r} first{detail}' if first is not None else 'returns nothing'
    return Problem(
        'warning',
        'not-first',
        group,
        tool,
        f'searching its own name in group {group!r} {found}',
        'give the tools names that differ by more than letter case and punctuation, or split them into groups',
    )


def duplicate(group: str, tool: str, owners: list[str]) -> Problem:
    """Error: several tools of one group share the local name `tool`; `owners` labels the toolsets defining it."""
    return Problem(
        'error',
        'duplicate-name',
        group,
        tool,
        f'{len(owners)} tools of the group share this local name: {", ".join(owners)}',
        'rename all but one, or prefix a source before combining (`toolset.prefixed("...")`), or put them in different groups',
    )


def canonical_collision(group: str, tool: str, canonical: str) -> Problem:
    """Error: the member's canonical name `{group}__{tool}` is also a direct tool's name."""
    return Problem(
        'error',
        'name-collision',
        group,
        tool,
        f'its canonical name {canonical!r} is also the name of a direct tool',
        f'rename the direct tool {canonical!r}, rename the group, or prefix the grouped source',
    )


def control_collision(name: str) -> Problem:
    """Error: a direct tool has a control's name."""
    return Problem(
        'error',
        'control-collision',
        None,
        name,
        f'a direct tool is named {name!r}, like a proxy control',
        'rename that tool, or choose other control names: --search-name/--call-name, [discovery] in a config file, '
        'or ToolProxyConfig(search_name=..., call_name=...)',
    )


def preparation(group: str | None, message: str) -> Problem:
    """Error: preparation fails for a reason no other kind covers; `message` is the `UserError` text."""
    return Problem(
        'error', 'preparation', group, None, f'preparation fails: {message}', 'follow the advice in the message'
    )


def server_start(group: str | None, message: str) -> Problem:
    """Error: a server of an `mcpServers` file did not start (`message` names it, the file and the exception); runs
    go on without its group. A start that timed out (`StartTimeout`) is told how to give it more time."""
    hint = (
        'give it more time: "startup_timeout_sec": <seconds> in its entry of the mcpServers file, or --start-timeout'
        if 'StartTimeout' in message
        else "fix the server's entry in the mcpServers file (command, args, env, cwd or url), or remove it"
    )
    return Problem('error', 'server-start', group, None, message, hint)
