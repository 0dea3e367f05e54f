"""Search and call facts on the controls' spans, as `toolproxy.*` attributes (docs/observability.md).

With Pydantic AI's instrumentation on (the `Instrumentation` capability, `Agent.instrument_all()`, or Logfire), each
tool call runs inside its own span; Pydantic AI's documented way for another capability to annotate it is
`opentelemetry.trace.get_current_span().set_attribute(...)`. The controls call `searched` and `called` (from
`controls/toolset.py`), which run `search_page` / `run_call` and set the attributes below on the control's span. Without
instrumentation (or when the current span is not the control's own) nothing is computed.

Content follows Pydantic AI's `include_content` (`ctx.trace_include_content`): without it no query text, no
arguments and no refusal message (which may quote the model's input) are recorded; sizes, counts, names and
reason codes always are. Arguments are never recorded here (Pydantic AI records the envelope's with content on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, Span
from pydantic_ai.exceptions import ModelRetry, ToolFailed, ToolRetryError, UsageLimitExceeded
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.tools import RunContext

from .. import _core
from .._messages import ProxyFailed
from .._runtime import ProxyRuntime
from ..grouping.directory import Member
from ..hybrid.ranking import Ranking
from .call import normalize_arguments

__all__ = ('ATTRIBUTES', 'called', 'control_span', 'searched')

ATTRIBUTES: dict[str, str] = {
    'toolproxy.control': '"search" or "call": which control the span is',
    'toolproxy.search.ranking': '"keyword" or "hybrid": the ranking the search used',
    'toolproxy.search.ranking_reason': 'why a surface with an embedder ranked by keywords (absent otherwise)',
    'toolproxy.search.tools_with_vectors': 'with an embedder: how many tools of the index had a vector',
    'toolproxy.search.query_bytes': "the query's length in UTF-8 bytes",
    'toolproxy.search.query': 'the query text (only with include_content)',
    'toolproxy.search.group': 'the group searched, when the search named one',
    'toolproxy.search.offset': 'the offset asked for',
    'toolproxy.search.limit': 'the limit asked for (absent when omitted)',
    'toolproxy.search.total': 'how many tools matched (`total` of the page)',
    'toolproxy.search.page.groups': "the page's entries' groups, in page order",
    'toolproxy.search.page.tools': "the page's entries' local tool names, in page order (parallel to .groups)",
    'toolproxy.search.page.count': 'how many entries the page holds',
    'toolproxy.search.page.bytes': 'the page as the model receives it, in UTF-8 JSON bytes',
    'toolproxy.search.next_offset': "the page's `next_offset` (absent when null)",
    'toolproxy.call.group': 'the group of the tool the call resolved to',
    'toolproxy.call.tool': 'the local name of the tool the call resolved to',
    'toolproxy.refusal': 'why the control answered with a retry or a failure instead of a result (codes below)',
    'toolproxy.refusal.message': 'the text the model got for it (only with include_content)',
}
"""Every attribute name set here, with its meaning (docs/observability.md shows the same table)."""

REFUSALS: dict[str, str] = {
    'invalid-query': 'search: the query is not a string or is longer than the query limit',
    'unknown-group': 'search or call: the group named is not a current group',
    'invalid-limit': 'search: `limit` outside 1..max_results',
    'invalid-offset': 'search: a negative `offset`',
    'oversized-entry': 'search: the first entry cannot fit alone in a page',
    'unserializable-entry': 'search: the first entry cannot be sent as JSON',
    'core-error': 'search: the Rust core failed (the index was rebuilt)',
    'unknown-tool': 'call: the group has no such tool in this step',
    'invalid-arguments': "call: `arguments` are not an object, or do not match the target's parameters",
    'usage-limit': "call: the target would exceed the run's tool-call limit (it did not run)",
    'target-retry': 'call: the target ran and asked for a retry (`ModelRetry`)',
    'target-failed': 'call: the target failed, was denied, or needs approval the call cannot give',
}
"""Every `toolproxy.refusal` code, with its meaning."""


def control_span(ctx: RunContext[Any]) -> Span | None:
    """The span of the control call running in `ctx`, or None when the run is not instrumented or the current
    span is not a recording span of this tool call (a host's own outer span is never annotated)."""
    if isinstance(ctx.tracer, NoOpTracer):
        return None
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    attributes = getattr(span, 'attributes', None)  # the SDK's spans expose theirs; the API's do not
    if attributes is not None and attributes.get('gen_ai.tool.name') not in (None, ctx.tool_name):
        return None
    return span


def _query_bytes(query: object) -> int | None:
    if not isinstance(query, str):
        return None
    return len(query) if query.isascii() else len(query.encode('utf-8', 'surrogatepass'))


def _search_refusal(
    runtime: ProxyRuntime, ctx: RunContext[Any], error: BaseException, query: Any, group: Any, limit: Any, offset: Any
) -> str:
    """The refusal code of a search that raised `error`, checking the arguments in `search_page`'s order."""
    if isinstance(error, ProxyFailed) and error.reason is not None:
        return error.reason.kind
    if not isinstance(error, ModelRetry):
        return 'target-failed' if isinstance(error, ToolFailed) else type(error).__name__
    size = _query_bytes(query)
    if size is None or size > _core.MAX_QUERY_BYTES:
        return 'invalid-query'
    if group is not None and group not in runtime.directory(ctx).groups:
        return 'unknown-group'
    if limit is not None and not (1 <= limit <= runtime.config.max_results):
        return 'invalid-limit'
    return 'invalid-offset'


def _message(error: BaseException) -> str:
    if isinstance(error, ModelRetry):
        return error.message
    if isinstance(error, ToolRetryError):
        part = error.tool_retry
        return part.model_response_str(wrap_if_error=False) if isinstance(part, ToolReturnPart) else str(part.content)
    return str(getattr(error, 'message', error))


def _refused(span: Span, ctx: RunContext[Any], code: str, error: BaseException) -> None:
    span.set_attribute('toolproxy.refusal', code)
    if ctx.trace_include_content:
        span.set_attribute('toolproxy.refusal.message', _message(error))


async def searched(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    query: Any,
    group: Any,
    limit: Any,
    offset: Any,
    run: Callable[..., Awaitable[tuple[dict[str, Any], Ranking, int]]],
) -> dict[str, Any]:
    """The page of `await run(ctx, runtime, query, group, limit, offset)` (the search control's `search_page`,
    which returns the page, its `Ranking` and its size in bytes), its facts set on the control's span: the
    arguments' facts before it runs, the page's and the ranking's after, the refusal code when it raises.

    Raises:
        Whatever `run` raises, unchanged.
    """
    span = control_span(ctx)
    if span is None:
        return (await run(ctx, runtime, query, group, limit, offset))[0]
    span.set_attribute('toolproxy.control', 'search')
    size = _query_bytes(query)
    if size is not None:
        span.set_attribute('toolproxy.search.query_bytes', size)
        if ctx.trace_include_content:
            span.set_attribute('toolproxy.search.query', query)
    if isinstance(group, str):
        span.set_attribute('toolproxy.search.group', group)
    if isinstance(offset, int):
        span.set_attribute('toolproxy.search.offset', offset)
    if isinstance(limit, int):
        span.set_attribute('toolproxy.search.limit', limit)
    try:
        page, ranking, page_bytes = await run(ctx, runtime, query, group, limit, offset)
    except Exception as e:
        _refused(span, ctx, _search_refusal(runtime, ctx, e, query, group, limit, offset), e)
        raise
    span.set_attribute('toolproxy.search.ranking', ranking.kind)
    if ranking.reason is not None:
        span.set_attribute('toolproxy.search.ranking_reason', ranking.reason)
    if ranking.tools:
        span.set_attribute('toolproxy.search.tools_with_vectors', ranking.tools_with_vectors)
    tools = page['tools']
    span.set_attribute('toolproxy.search.total', page['total'])
    span.set_attribute('toolproxy.search.page.groups', [entry['group'] for entry in tools])
    span.set_attribute('toolproxy.search.page.tools', [entry['tool'] for entry in tools])
    span.set_attribute('toolproxy.search.page.count', len(tools))
    span.set_attribute('toolproxy.search.page.bytes', page_bytes)
    if page['next_offset'] is not None:
        span.set_attribute('toolproxy.search.next_offset', page['next_offset'])
    return page


def _call_refusal(error: BaseException, resolved: bool, arguments: Any) -> str:
    """The refusal code of a call that raised `error` (`resolved`: its `(group, tool)` named a current member)."""
    if isinstance(error, UsageLimitExceeded):
        return 'usage-limit'
    if isinstance(error, ToolRetryError):
        if not resolved:
            return 'unknown-tool'
        retry = error.tool_retry.retry if isinstance(error.tool_retry, ToolReturnPart) else None
        if retry is not None and retry.cause == 'validation_error':
            return 'invalid-arguments'
        try:
            normalize_arguments(arguments)
        except ModelRetry:
            return 'invalid-arguments'
        return 'target-retry'
    if isinstance(error, ToolFailed):
        return 'target-failed'
    return type(error).__name__


async def called(
    ctx: RunContext[Any],
    runtime: ProxyRuntime,
    group: Any,
    tool: Any,
    arguments: Any,
    run: Callable[..., Awaitable[Any]],
) -> Any:
    """`await run(ctx, runtime, group, tool, arguments, resolved)` (the call control's `run_call`), with the
    `(group, tool)` it resolved set on the control's span before the target runs (`resolved`, called by `run_call`
    with the member it found, so the pair becomes a canonical name once per call), and the refusal code when it
    raises.

    Raises:
        Whatever `run` raises, unchanged.
    """
    span = control_span(ctx)
    if span is None:
        return await run(ctx, runtime, group, tool, arguments)
    span.set_attribute('toolproxy.control', 'call')
    found: list[Member] = []

    def resolved(member: Member) -> None:
        found.append(member)
        span.set_attribute('toolproxy.call.group', member.group)
        span.set_attribute('toolproxy.call.tool', member.local_name)

    try:
        return await run(ctx, runtime, group, tool, arguments, resolved)
    except Exception as e:
        known_group = isinstance(group, str) and group in runtime.directory(ctx).groups
        code = 'unknown-group' if not known_group else _call_refusal(e, bool(found), arguments)
        _refused(span, ctx, code, e)
        raise
