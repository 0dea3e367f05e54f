"""The call control: resolve `{group, tool, arguments}` against the current step and dispatch through `ToolManager`.

Spec: "Execution, usage, and limitations" (one execution path, native accounting, retries, inline approval
only, uncertain effects) and "Group a Toolset" (members stay registered under canonical names).
"""

from __future__ import annotations

import difflib
import json
from contextvars import ContextVar
from copy import copy
from dataclasses import replace
from typing import Any

from pydantic_ai.exceptions import (
    AgentRunError,
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    ToolFailed,
    ToolFailedError,
    ToolRetryError,
    UserError,
)
from pydantic_ai.messages import ToolCallPart, ToolReturnPart
from pydantic_ai.tools import RunContext, ToolDenied
from pydantic_core import ValidationError

from ._directory import Directory, Member
from ._runtime import ProxyRuntime

__all__ = ('run_call', 'dispatching', 'envelope_retry')

dispatching: ContextVar[str | None] = ContextVar('pydantic_ai_toolproxy.dispatching', default=None)
"""Canonical name of the member the call control is dispatching in the current task, else None.

The direct-call guard lets exactly that nested call through; a model's own direct call of a member
(in another task, or with another name) is refused.
"""

ENVELOPE_HINT = 'Expected envelope: {"group": "<group>", "tool": "<local tool name>", "arguments": {...}}.'
MAX_SHOWN_CHARS = 80
"""Longest repr of a model-supplied value echoed in a message; a 10 KB name is cut, not sent back whole."""
MAX_ERROR_CHARS = 500
"""Longest exception text quoted in an uncertain-outcome failure."""


def _cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (a cut text ends with `...`)."""
    return text if len(text) <= limit else text[: limit - 3] + '...'


def _shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """`repr(value)` cut to `limit` characters."""
    return _cut(repr(value), limit)


def _error_summary(errors: list[Any], prefix: tuple[str, ...] = ()) -> str:
    """Pydantic error details as `loc: msg (got <input>)`, at most 5 of them, inputs cut to 60 characters."""
    items: list[str] = []
    for error in errors[:5]:
        if not isinstance(error, dict):
            items.append(_shown(error))
            continue
        loc = '.'.join(str(p) for p in (*prefix, *error.get('loc', ()))) or '(envelope)'
        item = f'{loc}: {error.get("msg", "invalid")}'
        if 'input' in error and error.get('type') != 'missing':
            item += f' (got {_shown(error["input"], 60)})'
        items.append(item)
    if len(errors) > 5:
        items.append(f'and {len(errors) - 5} more')
    return '; '.join(items)


def envelope_retry(error: ValidationError | ModelRetry, search_name: str, call_name: str) -> ModelRetry:
    """The retry for an envelope that failed the call control's own validation (wrong types, missing or extra keys,
    invalid JSON): the errors, cut short, and what to send instead."""
    if isinstance(error, ValidationError):
        detail = _error_summary(list(error.errors(include_url=False, include_context=False)))
    else:
        detail = _shown(error.message, 300)
    return ModelRetry(
        f'Invalid `{call_name}` envelope: {detail}. {ENVELOPE_HINT} '
        f'Use `{search_name}` to find the current groups, tools and their parameter schemas.'
    )


def _close_names(directory: Directory, group: str, tool: str) -> list[str]:
    return difflib.get_close_matches(tool, directory.local_names(group), n=3, cutoff=0.5)


def resolve_member(runtime: ProxyRuntime, directory: Directory, group: Any, tool: Any) -> Member:
    """The current step's member for `(group, tool)`.

    Raises:
        ModelRetry: unknown group (lists the current groups) or unknown tool (at most 3 close names).
    """
    config = runtime.config
    if not isinstance(group, str) or group not in directory.groups:
        raise ModelRetry(
            f'Unknown group {_shown(group)}. Current groups: {", ".join(directory.groups) or "(none)"}. {ENVELOPE_HINT}'
        )
    if not isinstance(tool, str) or not tool:
        raise ModelRetry(f'`tool` must be the local tool name returned by `{config.search_name}`. {ENVELOPE_HINT}')
    member = directory.member(f'{group}__{tool}')
    # `{group}__{tool}` is ambiguous when a group name ends in `_` or a tool name starts with one: group `ops` +
    # tool `_purge` and group `ops_` + tool `purge` spell the same canonical name. Only the exact pair counts.
    if member is None or member.group != group or member.local_name != tool:
        close = _close_names(directory, group, tool) if len(tool) <= 256 else []
        hint = f' Close names: {", ".join(close)}.' if close else ''
        raise ModelRetry(
            f'Group {group!r} has no tool {_shown(tool)} in this step.{hint} '
            f'Use `{config.search_name}` with group={group!r} to find the current tools, then call again.'
        )
    return member


def normalize_arguments(arguments: Any) -> dict[str, Any]:
    """`arguments` as a dict: an object, a JSON string of an object, or None (no arguments).

    Raises:
        ModelRetry: any other shape, describing the expected envelope.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ModelRetry(f'`arguments` must be a JSON object; the string given is not valid JSON. {ENVELOPE_HINT}')
    if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
        raise ModelRetry(
            f'`arguments` must be an object matching the tool\'s parameters_json_schema, '
            f'got {type(arguments).__name__}. {ENVELOPE_HINT}'
        )
    return arguments


def _check_usage(ctx: RunContext[Any]) -> None:
    limits = ctx.usage_limits
    if limits is not None and limits.tool_calls_limit is not None:
        projected = copy(ctx.usage)
        # The envelope itself is counted once it returns; the target would be the next call after it.
        projected.tool_calls += 2
        limits.check_before_tool_call(projected)


def _as_envelope_retry(error: ToolRetryError, ctx: RunContext[Any], member: Member, search_name: str) -> ToolRetryError:
    """The target's retry, re-addressed to the envelope's call. Validation errors of the target's arguments are
    located under `arguments` and say how to fix them; a target's own `ModelRetry` message is kept as written."""
    part = error.tool_retry
    if isinstance(part, ToolReturnPart):
        content = part.content
        if isinstance(content, list):
            content = (
                f'`arguments` do not match the parameters of {member.local_name!r} in group {member.group!r}: '
                f'{_error_summary(content, ("arguments",))}. Fix `arguments` to match its parameters_json_schema '
                f'(`{search_name}` with group={member.group!r} returns it) and call again.'
            )
        part = replace(part, tool_name=ctx.tool_name, tool_call_id=ctx.tool_call_id, content=content)
    return ToolRetryError(part)


def _uncertain(member: Member, what: str, error: BaseException, fallback: str = '') -> str:
    """The failure message of a call whose effects are unknown (spec: "Uncertain effects"). `fallback` describes
    the error when its own text is empty (a bare `TimeoutError`)."""
    detail = str(error) or fallback
    return (
        f'Tool {member.local_name!r} in group {member.group!r} {what} ({type(error).__name__}: '
        f'{_cut(detail, MAX_ERROR_CHARS)}). Its outcome is uncertain: it may have had effects. Check the current '
        'state before retrying, especially before repeating a change.'
    )


_MCP_INTERRUPTED_CODES = frozenset({-32000, -32001, -32603})
"""MCP/JSON-RPC error codes after which a call may or may not have run: connection closed, request timeout,
internal error."""


def _interrupted_by(error: BaseException) -> BaseException | None:
    """The transport failure behind a target's retry, if any: a timeout, a lost connection or process, or an MCP
    error with an interrupted-call code. Pydantic AI's MCP toolset maps these to `ModelRetry` (its default
    `tool_error_behavior`); through the proxy they are uncertain-outcome failures instead, since the call may have
    run. A retry the tool asked for itself, or a validation error, has no such cause and stays a retry."""
    import anyio

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 32:
        seen.add(id(current))
        if isinstance(
            current,
            (TimeoutError, ConnectionError, EOFError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream),
        ):
            return current
        if type(current).__name__ in ('MCPError', 'McpError') and getattr(current, 'code', None) in _MCP_INTERRUPTED_CODES:
            return current
        current = current.__cause__ or current.__context__
    return None


async def run_call(ctx: RunContext[Any], runtime: ProxyRuntime, group: Any, tool: Any, arguments: Any) -> Any:
    """Run the target through `ctx.tool_manager.handle_call` and return its result.

    Raises:
        ModelRetry: bad envelope, unknown group/tool.
        ToolRetryError: the target's validation error or `ModelRetry`, re-addressed to the envelope's call id.
        ToolFailed: denial, unresolved approval/deferral, or an unexpected target failure (uncertain outcome).
        UsageLimitExceeded: the target would exceed `UsageLimits.tool_calls_limit` (the target does not run).
    """
    directory = runtime.directory(ctx)
    member = resolve_member(runtime, directory, group, tool)
    args = normalize_arguments(arguments)
    manager = ctx.tool_manager
    if manager is None:  # pragma: no cover - controls only run inside a step
        raise ToolFailed('No tool manager is available in this step.')
    _check_usage(ctx)
    call = ToolCallPart(tool_name=member.canonical, args=args, tool_call_id=f'{ctx.tool_call_id}>{member.canonical}')
    token = dispatching.set(member.canonical)
    try:
        result = await manager.handle_call(call)
    except ToolRetryError as e:
        if (cause := _interrupted_by(e)) is not None:  # e.g. an MCP server that timed out or died mid-call
            said = e.tool_retry.model_response_str(wrap_if_error=False) if isinstance(e.tool_retry, ToolReturnPart) else ''
            raise ToolFailed(_uncertain(member, 'did not complete', cause, said)) from e
        raise _as_envelope_retry(e, ctx, member, runtime.config.search_name) from None
    except ToolFailedError as e:
        raise ToolFailed(e.tool_failed.model_response_str(wrap_if_error=False)) from None
    except (ApprovalRequired, CallDeferred):
        raise ToolFailed(
            f'Tool {member.local_name!r} in group {member.group!r} needs host interaction (approval or an external '
            'result) that cannot be resolved inside this call, so it did not run. Ask the host to expose it directly.'
        ) from None
    except (AgentRunError, UserError, ModelRetry, ToolFailed):
        raise
    except Exception as e:
        raise ToolFailed(_uncertain(member, 'failed unexpectedly', e)) from e
    finally:
        dispatching.reset(token)
    if isinstance(result, ToolDenied):
        raise ToolFailed(f'The call to {member.local_name!r} in group {member.group!r} was denied: {result.message}')
    return result
