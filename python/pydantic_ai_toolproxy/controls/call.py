"""The call control: resolve `{group, tool, arguments}` against the current step and dispatch through `ToolManager`.

One execution path: the target runs through Pydantic AI's `ToolManager` under its canonical name, so its
validation, hooks, retries (charged to the target), usage limits and inline approval stay native; a call whose
effects are unknown (an interrupted or timed-out target) fails with a message that says so instead of a retry.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import sys
from collections.abc import Callable
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
    UnexpectedModelBehavior,
    UserError,
)
from pydantic_ai.messages import ModelResponse, RetryInfo, ToolCallPart, ToolReturnPart
from pydantic_ai.tools import RunContext, ToolDenied
from pydantic_core import ValidationError

from .._messages import ENVELOPE_HINT, bounded, cut, failed, listing, retry, shown
from .._runtime import ProxyRuntime
from ..grouping.directory import Directory, Member
from ..grouping.members import Dispatch, GroupMemberToolset, dispatch
from ..grouping.names import canonical_name

__all__ = (
    'charged_retry',
    'envelope_retry',
    'mcp_error_classes',
    'normalize_arguments',
    'proxy_failure',
    'resolve_member',
    'run_call',
)

MAX_ERROR_CHARS = 500
"""Longest exception text quoted in an uncertain-outcome failure."""
MAX_ARGUMENT_DEPTH = 100
"""Deepest nesting of `arguments` (objects and arrays) the call control forwards; a 10 KB string of `[[[[...` is
refused with a retry, never a `RecursionError` out of the run."""
MAX_KEY_CHARS = 128
"""Longest `group__tool` spelling used as a retry-budget key; longer names share one key per call control."""


def _error_summary(errors: list[Any], prefix: tuple[str, ...] = ()) -> str:
    """Pydantic error details as `loc: msg (got <input>)`, at most 5 of them, inputs cut to 60 characters."""
    items: list[str] = []
    for error in errors[:5]:
        if not isinstance(error, dict):
            items.append(shown(error))
            continue
        loc = '.'.join(cut(str(p), 60) for p in (*prefix, *error.get('loc', ()))[:8]) or '(envelope)'
        item = f'{loc}: {cut(str(error.get("msg", "invalid")), 200)}'
        if 'input' in error and error.get('type') not in ('missing', 'extra_forbidden'):
            item += f' (got {shown(error["input"], 60)})'
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
        detail = shown(error.message, 300)
    return retry(
        f'Invalid `{call_name}` envelope: {detail}. {ENVELOPE_HINT} '
        f'Use `{search_name}` to find the current groups, tools and their parameter schemas.'
    )


SEARCH_HINT = (
    'Expected arguments: {"query": "<keywords>", "group": "<group>" or null, "limit": <int> or null, "offset": <int>}.'
)


def search_arguments_retry(error: ValidationError | ModelRetry, search_name: str) -> ModelRetry:
    """The retry for search arguments that failed the search control's own validation (wrong types, extra keys,
    invalid JSON): the errors, cut short (inputs as cut reprs), and what to send instead."""
    if isinstance(error, ValidationError):
        detail = _error_summary(list(error.errors(include_url=False, include_context=False)))
    else:
        detail = shown(error.message, 300)
    return retry(f'Invalid `{search_name}` arguments: {detail}. {SEARCH_HINT}')


def _close_names(directory: Directory, group: str, tool: str) -> list[str]:
    return difflib.get_close_matches(tool, directory.local_names(group), n=3, cutoff=0.5)


def resolve_member(runtime: ProxyRuntime, directory: Directory, group: Any, tool: Any) -> Member:
    """The current step's member for `(group, tool)`.

    Raises:
        ModelRetry: unknown group (lists the current groups) or unknown tool (at most 3 close names of that group).
    """
    config = runtime.config
    if not isinstance(group, str) or group not in directory.groups:
        raise retry(f'Unknown group {shown(group)}. Current groups: {listing(directory.groups)}. {ENVELOPE_HINT}')
    if not isinstance(tool, str) or not tool:
        raise retry(f'`tool` must be the local tool name returned by `{config.search_name}`. {ENVELOPE_HINT}')
    member = directory.member_of(group, tool)
    if member is None:
        close = _close_names(directory, group, tool) if len(tool) <= 256 else []
        hint = f' Close names: {listing(close)}.' if close else ''
        raise retry(
            f'Group {group!r} has no tool {shown(tool)} in this step.{hint} '
            f'Use `{config.search_name}` with group={group!r} to find the current tools, then call again.'
        )
    return member


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (an iterative walk: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def normalize_arguments(arguments: Any) -> dict[str, Any]:
    """`arguments` as a dict: an object, a JSON string of an object, or None (no arguments).

    Raises:
        ModelRetry: any other shape, invalid JSON, or nesting deeper than `MAX_ARGUMENT_DEPTH`, describing the
            expected envelope.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as e:
            reason = cut(str(e), 120) if isinstance(e, ValueError) else 'nested too deeply'
            raise retry(
                f'`arguments` must be a JSON object; the string given is not valid JSON ({reason}). {ENVELOPE_HINT}'
            ) from None
    if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
        raise retry(
            f"`arguments` must be an object matching the tool's parameters_json_schema, "
            f'got {type(arguments).__name__}. {ENVELOPE_HINT}'
        )
    if _depth_exceeds(arguments, MAX_ARGUMENT_DEPTH):
        raise retry(
            f"`arguments` nest more than {MAX_ARGUMENT_DEPTH} levels deep; send a plain object matching the tool's "
            f'parameters_json_schema. {ENVELOPE_HINT}'
        )
    return arguments


def _budget_key(runtime: ProxyRuntime, group: Any, tool: Any) -> str:
    """The retry-budget key of an envelope naming an unknown `(group, tool)`: the canonical name it spells (prefixed
    with the call control's name), as the same mistake against a directly installed tool would be counted under that
    name; the call control's own name for names too long or not strings. A found member's refusals (bad `arguments`)
    are counted under its canonical name instead, with its own `max_retries`."""
    call_name = runtime.config.call_name
    if isinstance(group, str) and isinstance(tool, str) and group and tool and len(group) + len(tool) <= MAX_KEY_CHARS:
        # Prefixed, so that a refused envelope never shares a budget with a direct tool that has this name.
        return f'{call_name}:{canonical_name(group, tool)}'
    return call_name


def charged_retry(ctx: RunContext[Any], key: str, max_retries: int | None, message: str) -> ToolRetryError:
    """A retry of the envelope's call, counted against `key`'s retry budget instead of the call control's.

    Direct installation gives every tool, and every unknown name, a retry counter of its own; charging an envelope's
    refusal to the target it names keeps the proxy as forgiving: two typos in two tool names do not end the run.
    `max_retries` is the target's own budget, or None for the agent's default (an unknown name). Counted the way
    Pydantic AI's `ToolManager` counts a failed tool: the key joins `failed_tools`, and the next step's `retries`.

    Raises:
        UnexpectedModelBehavior: `key` has used up its budget, as Pydantic AI raises for a tool that has.
    """
    manager = ctx.tool_manager
    if manager is None:  # pragma: no cover - controls only run inside a step
        return ToolRetryError(
            ToolReturnPart(tool_name=ctx.tool_name or '', content=bounded(message), outcome='retried')
        )
    budget = manager.default_max_retries if max_retries is None else max_retries
    used = ctx.retries.get(key, 0)
    if used >= budget:
        named = key.removeprefix(f'{ctx.tool_name}:')
        raise UnexpectedModelBehavior(
            f'Calls of {ctx.tool_name!r} naming {named!r} exceeded max retries count of {budget}: {cut(message, 300)}'
        )
    manager.failed_tools.add(key)
    part = ToolReturnPart(
        tool_name=ctx.tool_name or '',
        content=bounded(message),
        tool_call_id=ctx.tool_call_id or '',
        outcome='retried',
        retry=RetryInfo(cause='model_retry'),
    )
    return ToolRetryError(part)


def _later_calls(ctx: RunContext[Any]) -> int:
    """Function-tool calls of the latest model response that come after this envelope's call and have not run yet.

    The call control is `sequential=True`, a barrier: calls before it in the response have completed (and are in
    `ctx.usage`), calls after it run once it returns. Pydantic AI checked the whole response's count before the
    batch; the target is one call more, so the calls still to come must be counted with it.
    """
    manager = ctx.tool_manager
    tools = manager.tools if manager is not None and manager.tools is not None else {}
    for message in reversed(ctx.messages):
        if isinstance(message, ModelResponse):
            later = 0
            found = False
            for part in message.parts:
                if not isinstance(part, ToolCallPart):
                    continue
                if found:
                    tool = tools.get(part.tool_name)
                    # A member called directly is refused (a retry, not counted), so it is left out.
                    later += (
                        tool is not None
                        and tool.tool_def.kind == 'function'
                        and not isinstance(tool.toolset, GroupMemberToolset)
                    )
                elif part.tool_call_id == ctx.tool_call_id:
                    found = True
            return later if found else 0
    return 0


def _check_usage(ctx: RunContext[Any]) -> None:
    """Raise `UsageLimitExceeded` when running the target would take the run over `UsageLimits.tool_calls_limit`,
    counting the envelope, its target and the response's calls still to run."""
    limits = ctx.usage_limits
    if limits is not None and limits.tool_calls_limit is not None:
        projected = copy(ctx.usage)
        # The envelope itself is counted once it returns; the target is one call more.
        projected.tool_calls += 2 + _later_calls(ctx)
        limits.check_before_tool_call(projected)


def _as_envelope_retry(error: ToolRetryError, ctx: RunContext[Any], member: Member, search_name: str) -> ToolRetryError:
    """The target's retry, re-addressed to the envelope's call. Validation errors of the target's arguments are
    located under `arguments` and say how to fix them; a target's own `ModelRetry` message is kept as written."""
    part = error.tool_retry
    if isinstance(part, ToolReturnPart):
        content = part.content
        if isinstance(content, list):
            content = bounded(
                f'`arguments` do not match the parameters of {shown(member.local_name)} in group {member.group!r}: '
                f'{_error_summary(content, ("arguments",))}. Fix `arguments` to match its parameters_json_schema '
                f'(`{search_name}` with group={member.group!r} returns it) and call again.'
            )
        part = replace(
            part,
            tool_name=ctx.tool_name or part.tool_name,
            tool_call_id=ctx.tool_call_id or part.tool_call_id,
            content=content,
        )
    return ToolRetryError(part)


def _uncertain(member: Member, what: str, error: BaseException, fallback: str = '') -> str:
    """The failure message of a call whose effects are unknown (an interrupted or timed-out target: it may have run). `fallback` describes
    the error when its own text is empty (a bare `TimeoutError`) or cannot be read (a `__str__` that raises)."""
    try:
        detail = str(error) or fallback
    except Exception:  # the target's exception cannot describe itself: its type still names it
        detail = fallback or 'its text cannot be read'
    return bounded(
        f'Tool {member.local_name!r} in group {member.group!r} {what} ({type(error).__name__}: '
        f'{cut(detail, MAX_ERROR_CHARS)}). Its outcome is uncertain: it may have had effects. Check the current '
        'state before retrying, especially before repeating a change.'
    )


_MCP_INTERRUPTED_CODES = frozenset({-32000, -32001, -32603})
"""MCP/JSON-RPC error codes after which a call may or may not have run: connection closed, request timeout,
internal error."""


def mcp_error_classes() -> tuple[type[BaseException], ...]:
    """The MCP error classes whose instances can be in flight in this process: the MCP SDK's (`mcp.MCPError`, named
    `McpError` before SDK 2) and Pydantic AI's `pydantic_ai.mcp.MCPError`, each once its module is loaded.

    An error of a class is only raised once its module is loaded, so nothing is imported for a plain tool's retry:
    the SDK's module is imported (guarded: `mcp` may not be installed) only when `mcp` is in `sys.modules`, and
    Pydantic AI's only read from there (importing `pydantic_ai.mcp` would pull in fastmcp).
    """
    found: list[type[BaseException]] = []
    if 'mcp' in sys.modules:
        sdk: object = None
        with contextlib.suppress(ImportError):  # a broken or partial SDK install: no SDK class
            from mcp.shared import exceptions as sdk
        for name in ('MCPError', 'McpError'):
            cls = getattr(sdk, name, None)
            if isinstance(cls, type) and issubclass(cls, BaseException) and cls not in found:
                found.append(cls)
    pydantic_ai_mcp = sys.modules.get('pydantic_ai.mcp')
    cls = getattr(pydantic_ai_mcp, 'MCPError', None)
    if isinstance(cls, type) and issubclass(cls, BaseException) and cls not in found:
        found.append(cls)
    return tuple(found)


def _interrupted_by(error: BaseException) -> BaseException | None:
    """The transport failure behind a target's retry, if any: a timeout, a lost connection or process, or an MCP
    error with an interrupted-call code. Pydantic AI's MCP toolset maps these to `ModelRetry` (its default
    `tool_error_behavior`); through the proxy they are uncertain-outcome failures instead, since the call may have
    run. A retry the tool asked for itself, or a validation error, has no such cause and stays a retry."""
    import anyio

    mcp_errors = mcp_error_classes()
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 32:
        seen.add(id(current))
        if isinstance(
            current,
            (
                TimeoutError,
                ConnectionError,
                EOFError,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
                anyio.EndOfStream,
            ),
        ):
            return current
        if isinstance(current, mcp_errors) and getattr(current, 'code', None) in _MCP_INTERRUPTED_CODES:
            return current
        # The suppressed context too: Pydantic AI's function-tool timeout is `raise ModelRetry(...) from None`
        # inside its `except TimeoutError`. (So a tool's own retry raised the same way inside a timeout handler
        # also reads as interrupted; the chain cannot tell the two apart.)
        current = current.__cause__ or current.__context__
    return None


def _response_calls_output(ctx: RunContext[Any]) -> bool | None:
    """Whether the latest model response, the one holding this envelope's call, also calls an output tool (e.g.
    `final_result` of `output_type=SomeModel`): a result that would end the run in the same step.

    None when that response is not in the run's messages yet: `Agent.run_stream` runs a response's tool calls after
    it has committed the streamed output, before the response joins the history (the only path seen to do so).
    """
    manager = ctx.tool_manager
    if manager is None:  # pragma: no cover - controls only run inside a step
        return False
    if not ctx.messages or not isinstance(ctx.messages[-1], ModelResponse):
        return None  # the latest message is a request: the response being run is not in the history
    for part in ctx.messages[-1].parts:
        # A nested dispatch (the envelope's call is not the model's own) finds no output call here either.
        if isinstance(part, ToolCallPart) and part.tool_call_id != ctx.tool_call_id:
            tool_def = manager.get_tool_def(part.tool_name)
            if tool_def is not None and tool_def.kind == 'output':
                return True
    return False


def proxy_failure(
    ctx: RunContext[Any], member: Member, message: str, error: BaseException | None = None
) -> BaseException:
    """The error a failure the call control writes itself (an uncertain outcome, an unresolved deferral) is raised as.

    A `ToolFailed` (the envelope's result has `outcome='failed'`, the run continues), unless the same model response
    also calls an output tool: then a retry of the envelope with the same text, charged to the target's retry budget,
    so that Pydantic AI's retry-wins rule keeps that output from ending the run until the model has read the
    failure ("no silent success"). A direct tool in that spot would have raised out of the run (an unexpected
    exception) or retried (a timeout, an MCP error); a plain `ToolFailed` would let the output win. When the output
    is already committed (`Agent.run_stream`: no retry can hold it), the run raises instead: `error` itself when the
    target raised it (as a direct tool's exception ends the run), else `AgentRunError` with the failure's text.

    Raises:
        UnexpectedModelBehavior: the target has used up its retry budget (as a direct tool's retries would).
    """
    beside_output = _response_calls_output(ctx)
    if beside_output is None:
        if error is not None:
            return error
        return AgentRunError(f'{message} (The streamed output was already final, so the run ends here.)')
    if beside_output:
        return charged_retry(ctx, member.canonical, member.tool.max_retries, message)
    return ToolFailed(bounded(message))


def _deferral_message(member: Member, error: ApprovalRequired | CallDeferred, entry: Dispatch) -> str:
    """What the model is told about a deferral no inline handler resolved: "did not run" only when the deferral was
    declared before the target's source was called (its kind, `requires_approval`, a `prepare` decision, a validation
    hook); when the source was called and then deferred, that its work may have started and its result cannot arrive
    through this call. Carries no deferral metadata (it can be private to the host)."""
    if isinstance(error, ApprovalRequired):
        need = 'approval'
    else:
        need = 'an answer' if getattr(error, 'kind', 'external') == 'question' else 'an external result'
    name = f'Tool {member.local_name!r} in group {member.group!r}'
    if not entry.entered:
        return bounded(
            f'{name} needs host interaction ({need}) before it runs, which cannot be resolved inside this call, '
            'so it did not run. Ask the host to expose it directly.'
        )
    return bounded(
        f'{name} started and then asked for host interaction ({need}), which cannot be resolved inside this call. '
        'Its work may have started (e.g. a job it submitted), and its result cannot arrive through this call. '
        'Check the current state before calling it again; ask the host to expose it directly to get its result.'
    )


async def run_call(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    group: Any,
    tool: Any,
    arguments: Any,
    resolved: Callable[[Member], None] | None = None,
) -> Any:
    """Run the target through `ctx.tool_manager.handle_call` and return its result; `resolved` (the span's, see
    `controls.spans.called`) is told the member `(group, tool)` resolved to, before anything else runs.

    Raises:
        ModelRetry: bad envelope, unknown group/tool.
        ToolRetryError: the target's validation error or `ModelRetry`, re-addressed to the envelope's call id; or a
            failure the call control writes itself when the same response calls an output tool (`proxy_failure`).
        ToolFailed: denial, the target's own `ToolFailed`, unresolved approval/deferral, or an unexpected target
            failure (uncertain outcome).
        UsageLimitExceeded: the target would exceed `UsageLimits.tool_calls_limit` (the target does not run).
        UnexpectedModelBehavior: the target's retry budget is used up.
        AgentRunError, or the target's own exception: a failure the call control writes itself, once the output is
            already committed (`Agent.run_stream`), see `proxy_failure`.
    """
    directory = runtime.directory(ctx)
    try:
        member = resolve_member(runtime, directory, group, tool)
    except ModelRetry as e:
        raise charged_retry(ctx, _budget_key(runtime, group, tool), None, e.message) from None
    if resolved is not None:
        resolved(member)
    try:
        args = normalize_arguments(arguments)
    except ModelRetry as e:
        raise charged_retry(ctx, member.canonical, member.tool.max_retries, e.message) from None
    manager = ctx.tool_manager
    if manager is None:  # pragma: no cover - controls only run inside a step
        raise ToolFailed('No tool manager is available in this step.')
    _check_usage(ctx)
    call = ToolCallPart(tool_name=member.canonical, args=args, tool_call_id=f'{ctx.tool_call_id}>{member.canonical}')
    with dispatch(member.canonical) as entry:
        try:
            result = await manager.handle_call(call)
        except ToolRetryError as e:
            if (cause := _interrupted_by(e)) is not None:  # e.g. an MCP server that timed out or died mid-call
                said = (
                    e.tool_retry.model_response_str(wrap_if_error=False)
                    if isinstance(e.tool_retry, ToolReturnPart)
                    else ''
                )
                raise proxy_failure(ctx, member, _uncertain(member, 'did not complete', cause, said)) from e
            raise _as_envelope_retry(e, ctx, member, runtime.config.search_name) from None
        except ToolFailedError as e:
            raise ToolFailed(e.tool_failed.model_response_str(wrap_if_error=False)) from None
        except (ApprovalRequired, CallDeferred) as e:
            raise proxy_failure(ctx, member, _deferral_message(member, e, entry)) from None
        except (AgentRunError, UserError, ModelRetry, ToolFailed):
            raise
        except Exception as e:
            failure = proxy_failure(ctx, member, _uncertain(member, 'failed unexpectedly', e), e)
            if failure is e:
                raise
            raise failure from e
    if isinstance(result, ToolDenied):
        raise failed(f'The call to {member.local_name!r} in group {member.group!r} was denied: {result.message}')
    return result
