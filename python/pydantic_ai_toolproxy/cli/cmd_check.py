"""`toolproxy check`: everything that would fail or misbehave at runtime, each with its tool and fix.

All findings come from real agent runs (`_probe.probe`):

1. The groups under one `ToolProxyCapability`; if preparation raises `UserError`, each group alone, and for
   a failing group its tools listed through a filter that keeps none, to find every unsupported member
   (`grouping.members.unsupported_member`) and, for a combined source, every duplicate local name.
2. In the same run, the scripted model searches every member twice, as a model would: a browse page of
   exactly that entry (`query=""`, `offset=k`, `limit=1`) to find entries larger than `max_search_bytes`,
   and a search for its own name in its group, which must return it first. A failed search is read by the
   `FailureReason` the control raised beside its text (`ProbeRun.failures`), never by parsing the text.
3. The direct sources together with the proxy: a `UserError` there is a canonical-name or control-name
   collision, listed in full by comparing the direct tools' names with the members' canonical names.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic_ai.capabilities import CombinedCapability
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset

from .._messages import FailureReason
from ..grouping.directory import Member
from ..grouping.members import unsupported_member
from ._probe import Calls, ProbeRun, Snapshot, grouped_members, probe
from ._problems import (
    Problem,
    blank_description,
    canonical_collision,
    control_collision,
    duplicate,
    not_first,
    oversized,
    preparation,
    server_start,
    unsupported,
)
from ._progress import Progress
from ._render import Column, Output, num, plural
from ._sources import Source, Surface

__all__ = ('find_problems', 'run_check')


def _as_toolset(source: Source) -> AbstractToolset[Any] | None:
    """The source's toolset, read the way a group reads it at agent construction (None: no toolset to list)."""
    if isinstance(source, AbstractToolset):
        return source
    toolset = source.get_toolset()
    return toolset if isinstance(toolset, AbstractToolset) else None


def _label(source: Source) -> str:
    return source.label if isinstance(source, AbstractToolset) else type(source).__name__


async def _list_tools(source: Source) -> list[ToolDefinition] | None:
    """Every tool definition the source prepares, through a filter that keeps none of them (so nothing can
    fail on unsupported tools), or None when the source itself fails to list (e.g. a name conflict inside it)."""
    toolset = _as_toolset(source)
    if toolset is None:
        return None
    seen: list[ToolDefinition] = []

    def record(ctx: RunContext[Any], tool_def: ToolDefinition) -> bool:
        seen.append(tool_def)
        return False

    run = await probe(toolsets=[toolset.filtered(record)])
    return seen if run.error is None else None


async def _diagnose(group: str, source: Source, error: UserError) -> tuple[list[Problem], int]:
    """Every problem of a group that cannot prepare alone (`error` is what the capability raised), and its tool count."""
    tools = await _list_tools(source)
    if tools is not None:
        found: list[Problem] = []
        blank: list[Problem] = []
        for tool_def in tools:
            if (reason := unsupported_member(tool_def)) is not None:
                found.append(unsupported(group, tool_def.name, reason))
            elif not (tool_def.description or '').strip():
                blank.append(blank_description(group, tool_def.name))
        return (found or [preparation(group, str(error))]) + blank, len(tools)
    children: Sequence[Source] = ()
    if isinstance(source, CombinedToolset):
        children = source.toolsets
    elif isinstance(source, CombinedCapability):
        children = source.capabilities
    owners: dict[str, list[str]] = {}
    for child in children:
        child_tools = await _list_tools(child)
        if child_tools is None:
            return [preparation(group, str(error))], 0
        for tool_def in child_tools:
            owners.setdefault(tool_def.name, []).append(_label(child))
    found = [duplicate(group, name, labels) for name, labels in owners.items() if len(labels) > 1]
    return found or [preparation(group, str(error))], sum(len(labels) for labels in owners.values())


def _plan(capability: Any, search_name: str, plan: list[tuple[str, Member]]) -> Calls:
    """The probe's calls: per member a one-entry browse page at its position and a search for its own name;
    `plan` records what each call (by index) was for."""

    def calls(snapshot: Snapshot) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        for group, members in grouped_members(capability, snapshot).items():
            for offset, member in enumerate(members):
                plan.append(('browse', member))
                out.append((search_name, {'query': '', 'group': group, 'offset': offset, 'limit': 1}))
            for member in members:
                plan.append(('name', member))
                out.append((search_name, {'query': member.local_name, 'group': group, 'limit': 1}))
        return out

    return calls


def _page(part: ToolReturnPart | None) -> dict[str, Any] | str:
    if part is None:
        return 'no result'
    if part.outcome != 'success':
        return part.model_response_str(wrap_if_error=False)
    page: dict[str, Any] = json.loads(part.model_response_str())
    return page


def _oversized_entry(run: ProbeRun, call_id: str) -> FailureReason | None:
    """The `oversized-entry` reason of a failed probe search, else None."""
    reason = run.failures.get(call_id)
    return reason if reason is not None and reason.kind == 'oversized-entry' else None


def _search_problems(run: ProbeRun, plan: list[tuple[str, Member]], budget: int) -> list[Problem]:
    problems: list[Problem] = []
    too_large: set[tuple[str | None, str | None]] = set()
    for i, (mode, member) in enumerate(plan):
        call_id = f'probe-{i}'
        page = _page(run.returns.get(call_id))
        if mode == 'browse':
            if isinstance(page, str):
                reason = _oversized_entry(run, call_id)
                if reason is None or reason.group is None or reason.tool is None or reason.entry_bytes is None:
                    problems.append(preparation(member.group, f'browsing group {member.group!r} fails: {page}'))
                elif (reason.group, reason.tool) not in too_large:
                    too_large.add((reason.group, reason.tool))
                    problems.append(
                        oversized(
                            reason.group,
                            reason.tool,
                            reason.entry_bytes,
                            reason.instruction_bytes,
                            budget,
                            len(plan) // 2,
                        )
                    )
            continue
        if isinstance(page, str):
            reason = _oversized_entry(run, call_id)
            if reason is not None and reason.tool == member.local_name:
                continue  # reported as oversized by the browse pass
            first = reason.tool if reason is not None else None
            problems.append(
                not_first(
                    member.group, member.local_name, first, ', whose entry is too large' if reason else f': {page}'
                )
            )
        elif not page['tools'] or page['tools'][0]['tool'] != member.local_name:
            problems.append(
                not_first(member.group, member.local_name, page['tools'][0]['tool'] if page['tools'] else None)
            )
    return problems


def _collisions(
    surface: Surface, members: dict[str, list[Member]], direct: set[str], error: UserError
) -> list[Problem]:
    found = [
        canonical_collision(m.group, m.local_name, m.canonical)
        for ms in members.values()
        for m in ms
        if m.canonical in direct
    ]
    found += [
        control_collision(name) for name in (surface.config.search_name, surface.config.call_name) if name in direct
    ]
    return found or [preparation(None, str(error))]


async def find_problems(surface: Surface, progress: Progress) -> tuple[list[Problem], dict[str, Any]]:
    """All problems of the surface, and counts: `tools` (grouped tools checked), `groups`, `direct_tools`."""
    problems: list[Problem] = [server_start(group, message) for group, message in surface.unavailable]
    healthy = list(surface.groups)
    unhealthy_tools = 0
    with progress.step(f'preparing {len(healthy)} groups') as step:
        first = await probe(capabilities=[surface.capability()])
        if first.error is not None:
            healthy = []
            for name, group in surface.groups.items():
                alone = await probe(capabilities=[surface.capability([name])])
                if alone.error is None:
                    healthy.append(name)
                else:
                    found, count = await _diagnose(name, group.source, alone.error)
                    problems += found
                    unhealthy_tools += count
        step.done(f'{len(healthy)} of {len(surface.groups)} groups prepare')
    capability = surface.capability(healthy)
    plan: list[tuple[str, Member]] = []
    with progress.step('searching every grouped tool, by position and by its own name'):
        searched = await probe(capabilities=[capability], calls=_plan(capability, surface.config.search_name, plan))
    if searched.snapshot is None:  # pragma: no cover - the healthy groups prepared a moment ago
        problems.append(preparation(None, str(searched.error)))
        return problems, {'tools': 0, 'groups': len(surface.groups), 'direct_tools': 0}
    members = grouped_members(capability, searched.snapshot)
    for group_members in members.values():
        problems += [
            blank_description(m.group, m.local_name)
            for m in group_members
            if not (m.tool_def.description or '').strip()
        ]
    problems += _search_problems(searched, plan, surface.config.max_search_bytes)
    direct_tools = 0
    if surface.direct:
        with progress.step('preparing the direct sources, alone and with the proxy'):
            base = await probe(toolsets=surface.direct_toolsets(), capabilities=surface.direct_capabilities())
            if base.snapshot is None:
                problems.append(preparation(None, f'the direct sources alone fail: {base.error}'))
            else:
                direct_tools = len(base.snapshot.tools)
                whole = await probe(
                    toolsets=surface.direct_toolsets(),
                    capabilities=[*surface.direct_capabilities(), surface.capability(healthy)],
                )
                if whole.error is not None:
                    problems += _collisions(surface, members, set(base.snapshot.tools), whole.error)
    counts = {
        'tools': unhealthy_tools + sum(len(m) for m in members.values()),
        'groups': len(surface.groups),
        'direct_tools': direct_tools,
    }
    return problems, counts


async def run_check(surface: Surface, out: Output, progress: Progress, *, strict: bool = False) -> int:
    """Print every problem with its tool and fix.

    Returns:
        1 when any error (something would fail at runtime) is found, or any warning with `strict`; else 0.

    JSON document: `tools`, `groups`, `direct_tools`, `max_search_bytes`, `errors`, `warnings`, and
    `problems` (each `severity`, `kind`, `group`, `tool`, `message`, `fix`, `size` in bytes or null).
    """
    problems, counts = await find_problems(surface, progress)
    order = {'error': 0, 'warning': 1}
    problems.sort(key=lambda p: order[p.severity])
    errors = sum(p.severity == 'error' for p in problems)
    warnings = len(problems) - errors
    status = 1 if errors or (strict and warnings) else 0
    if out.as_json:
        out.json(
            {
                **counts,
                'max_search_bytes': surface.config.max_search_bytes,
                'errors': errors,
                'warnings': warnings,
                'problems': [p.as_json() for p in problems],
            }
        )
        return status
    out.line(
        f'Checked {plural(counts["tools"], "grouped tool")} in {plural(counts["groups"], "group")} and '
        f'{plural(counts["direct_tools"], "direct tool")} (max_search_bytes {num(surface.config.max_search_bytes)}).'
    )
    if problems and out.rich:
        out.table(
            [
                Column('severity'),
                Column('problem'),
                Column('tool'),
                Column('what is wrong', wrap=True),
                Column('fix', wrap=True),
            ],
            [[p.severity, p.kind, p.where, p.message, p.fix] for p in problems],
        )
    elif problems:  # plain: one block per problem, its first line `severity kind group/tool` (grep-friendly)
        for p in problems:
            out.line(f'{p.severity:<8} {p.kind:<18} {p.where}')
            out.line(f'         {p.message}')
            out.line(f'         fix: {p.fix}')
    counts_text = Counter(p.kind for p in problems)
    summary = ', '.join(f'{n} {kind}' for kind, n in counts_text.items())
    if errors:
        out.line(
            f'{plural(errors, "error")}, {plural(warnings, "warning")} ({summary}): this grouping would fail at runtime.',
            style='bold red',
        )
    elif warnings:
        out.line(f'{plural(warnings, "warning")} ({summary}); nothing would fail.', style='yellow')
    else:
        out.line('No problems found.', style='green')
    return status
