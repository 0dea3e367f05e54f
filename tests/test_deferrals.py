"""Unresolved deferrals say what is true: "did not run" only when the deferral was declared before the target ran.

Declared before execution: the tool's kind (`requires_approval=True`), a `prepare` function that makes it
`unapproved`, a capability's validate or execute hook raising `ApprovalRequired`/`CallDeferred` before the source is
called. Raised once the source was called (the tool's body, Pydantic AI's documented external-tool pattern: submit a
job, then `raise CallDeferred`): the work may have started and its result cannot arrive through this call. Neither
message carries the deferral's metadata, which can be private to the host. Real runs, real toolsets, real hooks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, HandleDeferredToolCalls
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, RunContext, Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import CALL, Script, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

pytestmark = pytest.mark.anyio

JOBS: list[str] = []
DID_NOT_RUN = 'so it did not run'
MAY_HAVE_STARTED = 'Its work may have started'
SECRET = 'tok-4f9a-private'


@pytest.fixture(autouse=True)
def _clear() -> None:
    JOBS.clear()


def submit_report(name: str) -> str:
    """Submit a report job; its result arrives outside the run."""
    JOBS.append(name)
    raise CallDeferred(metadata={'job_token': SECRET})


def approve_refund(amount: int) -> str:
    """Refund, asking for approval half-way through."""
    JOBS.append('refund prepared')
    raise ApprovalRequired(metadata={'approval_token': SECRET})


def delete_account(account_id: int) -> str:
    """Delete an account (needs approval)."""
    JOBS.append('deleted')
    return 'deleted'


async def _unapproved(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
    return replace(tool_def, kind='unapproved')


def wipe_disk(disk: str) -> str:
    """Wipe a disk (a `prepare` function asks for approval)."""
    JOBS.append('wiped')
    return 'wiped'


def plain(note: str) -> str:
    """A plain tool a capability hook defers."""
    JOBS.append('plain')
    return 'ok'


def jobs() -> FunctionToolset[Any]:
    return FunctionToolset(
        [
            submit_report,
            approve_refund,
            Tool(delete_account, requires_approval=True),
            Tool(wipe_disk, prepare=_unapproved),
            plain,
        ]
    )


class DeferInHook(AbstractCapability[Any]):
    """Raises a deferral for `jobs__plain` from a validate hook (`after_tool_validate`) or an execute hook
    (`before_tool_execute`), before the tool runs."""

    def __init__(self, where: str) -> None:
        self.where = where

    async def after_tool_validate(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any
    ) -> Any:
        if self.where == 'validate' and call.tool_name == 'jobs__plain':
            raise ApprovalRequired(metadata={'hook_token': SECRET})
        return args

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any
    ) -> Any:
        if self.where == 'execute' and call.tool_name == 'jobs__plain':
            raise CallDeferred(metadata={'hook_token': SECRET})
        return args


async def said(tool: str, arguments: dict[str, Any], *extra: Any) -> str:
    """What the model read back for one proxied call of `tool` in group `jobs`."""
    proxy = ToolProxyCapability(groups={'jobs': ToolProxyGroup(source=jobs(), description='Background jobs')})
    script = Script([[(CALL, {'group': 'jobs', 'tool': tool, 'arguments': arguments})]])
    result = await Agent(script.model, capabilities=[proxy, *extra]).run('go')
    assert result.output == 'done'  # never suspended
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert part.outcome == 'failed'
    text = part.model_response_str(wrap_if_error=False)
    assert SECRET not in text and 'token' not in text
    return text


@pytest.mark.parametrize(
    ('tool', 'arguments', 'need'),
    [
        ('delete_account', {'account_id': 3}, 'approval'),
        ('wipe_disk', {'disk': 'sda'}, 'approval'),
    ],
    ids=['requires_approval', 'prepare makes it unapproved'],
)
async def test_a_declared_deferral_says_the_tool_did_not_run(tool: str, arguments: dict[str, Any], need: str) -> None:
    text = await said(tool, arguments)
    assert DID_NOT_RUN in text and f'({need})' in text and MAY_HAVE_STARTED not in text
    assert JOBS == []


@pytest.mark.parametrize('where', ['validate', 'execute'])
async def test_a_deferral_raised_by_a_hook_before_the_tool_runs_says_it_did_not_run(where: str) -> None:
    text = await said('plain', {'note': 'x'}, DeferInHook(where))
    assert DID_NOT_RUN in text and MAY_HAVE_STARTED not in text
    assert JOBS == []


async def test_call_deferred_after_submitting_a_job_says_the_work_may_have_started() -> None:
    text = await said('submit_report', {'name': 'q3'})
    assert JOBS == ['q3']  # the job was submitted: the model must not be told it did not run
    assert MAY_HAVE_STARTED in text and 'cannot arrive through this call' in text and DID_NOT_RUN not in text
    assert '(an external result)' in text


async def test_approval_required_from_the_body_says_the_work_may_have_started() -> None:
    text = await said('approve_refund', {'amount': 5})
    assert JOBS == ['refund prepared']
    assert MAY_HAVE_STARTED in text and '(approval)' in text and DID_NOT_RUN not in text


async def test_an_approved_call_whose_body_then_defers_says_the_work_may_have_started() -> None:
    """The declared approval is resolved inline; the approved run of the body then raises a deferral."""

    def approve_then_defer(n: int) -> str:
        """Approved, then submits a job and defers."""
        JOBS.append('submitted after approval')
        raise CallDeferred()

    async def approve(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        return requests.build_results(approve_all=True) if requests.approvals else DeferredToolResults()

    source = FunctionToolset([Tool(approve_then_defer, requires_approval=True)])
    proxy = ToolProxyCapability(groups={'jobs': ToolProxyGroup(source=source, description='Background jobs')})
    script = Script([[(CALL, {'group': 'jobs', 'tool': 'approve_then_defer', 'arguments': {'n': 1}})]])
    result = await Agent(script.model, capabilities=[proxy, HandleDeferredToolCalls(handler=approve)]).run('go')
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert JOBS == ['submitted after approval']
    assert MAY_HAVE_STARTED in part.model_response_str(wrap_if_error=False)


async def test_a_question_from_the_body_says_an_answer_is_needed() -> None:
    try:
        question = CallDeferred(kind='question')  # type: ignore[call-arg, unused-ignore]
    except TypeError:  # pragma: no cover - Pydantic AI before question deferrals
        pytest.skip('this Pydantic AI has no question deferrals')

    def ask(topic: str) -> str:
        """Ask the user something."""
        JOBS.append('asked')
        raise question

    proxy = ToolProxyCapability(groups={'jobs': ToolProxyGroup(source=FunctionToolset([ask]), description='Jobs')})
    script = Script([[(CALL, {'group': 'jobs', 'tool': 'ask', 'arguments': {'topic': 't'}})]])
    result = await Agent(script.model, capabilities=[proxy]).run('go')
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert '(an answer)' in part.model_response_str(wrap_if_error=False)


async def test_a_source_wrapped_in_approval_required_says_the_tool_did_not_run() -> None:
    """Pydantic AI's own declaration for a whole toolset (`FunctionToolset(...).approval_required()`): its wrapper
    asks for approval before the tool body is called, so nothing ran; a call it lets through (the function says no
    approval is needed) runs as usual."""
    source = FunctionToolset([delete_account, plain]).approval_required(
        lambda ctx, tool_def, args: tool_def.name == 'delete_account'
    )
    proxy = ToolProxyCapability(groups={'jobs': ToolProxyGroup(source=source, description='Background jobs')})
    script = Script(
        [
            [(CALL, {'group': 'jobs', 'tool': 'delete_account', 'arguments': {'account_id': 3}})],
            [(CALL, {'group': 'jobs', 'tool': 'plain', 'arguments': {'note': 'x'}})],
        ]
    )
    result = await Agent(script.model, capabilities=[proxy]).run('go')
    declared, passed = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    text = declared.model_response_str(wrap_if_error=False)
    assert declared.outcome == 'failed' and DID_NOT_RUN in text and MAY_HAVE_STARTED not in text, text
    assert passed.outcome == 'success' and JOBS == ['plain']


async def test_a_source_wrapped_in_approval_required_runs_once_approved_inline() -> None:
    async def approve(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        return requests.build_results(approve_all=True) if requests.approvals else DeferredToolResults()

    source = FunctionToolset([delete_account]).approval_required()
    proxy = ToolProxyCapability(groups={'jobs': ToolProxyGroup(source=source, description='Background jobs')})
    script = Script([[(CALL, {'group': 'jobs', 'tool': 'delete_account', 'arguments': {'account_id': 3}})]])
    result = await Agent(script.model, capabilities=[proxy, HandleDeferredToolCalls(handler=approve)]).run('go')
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert part.outcome == 'success' and part.model_response_str() == 'deleted' and JOBS == ['deleted']
