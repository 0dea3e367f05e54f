"""A transcript shared by tenants: the same `message_history` objects start runs of different tenants (one shared
capability whose source lists per-deps member sets). Each run's model reads the short unknown-tool retry written for
its own tenant's tools, never one written by another tenant's run (`controls.unknown.RetryRewrites` is kept per run). The
tenants and their catalogues are tests/test_tenants.py's.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from support import returns
from test_tenants import Tenant, tenant_proxy

pytestmark = pytest.mark.anyio

TENANTS = ('acme', 'globex')


def calls_then_done(name: str) -> FunctionModel:
    """Calls the tool `name` directly once (an unknown name), then answers 'done'."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[ToolCallPart(name, {})])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model)


async def test_a_history_shared_by_tenants_gets_each_tenants_own_unknown_tool_retry() -> None:
    proxy = tenant_proxy(list(TENANTS))
    first = Agent(calls_then_done('operate_record_3'), deps_type=Tenant, capabilities=[proxy])
    shared = (await first.run('go', deps=Tenant('acme'))).all_messages()
    seen: dict[str, list[ModelMessage]] = {}

    def recording(tenant: str) -> FunctionModel:
        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen[tenant] = list(messages)
            return ModelResponse(parts=[TextPart('done')])

        return FunctionModel(model)

    for tenant in TENANTS:
        agent = Agent(recording(tenant), deps_type=Tenant, capabilities=[proxy])
        await agent.run('again', deps=Tenant(tenant), message_history=shared)
    for tenant, other in zip(TENANTS, reversed(TENANTS)):
        [retry] = [p for p in returns(seen[tenant]) if p.outcome == 'retried']
        text = retry.model_response_str()
        assert f'{tenant}_op_' in text and other not in text, text
