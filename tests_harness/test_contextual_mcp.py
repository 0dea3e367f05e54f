"""A grouped run-bound `ContextualMCP` against a real streamable-HTTP MCP server on loopback.

Spec: "Group a run-bound MCP Capability". The server (`kb_mcp_server.py`, started by the `kb_server` fixture)
records the headers of every HTTP request it receives.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder, RunBindings
from a13n_harness.identity import AgentIdentityRef, AgentInstanceContext
from a13n_harness.mcp import ContextualMCP, MCPContextHeaderBinding, MCPContextHeaders, MCPContextHeadersConfig
from harness_support import CALL, SEARCH, StreamScript, page_of, returns
from kb_mcp_server import INSTRUCTIONS
from pydantic_ai.exceptions import UserError

from conftest import KnowledgeServer
from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup, ToolProxyPlan, ToolProxySelection


class CountingHeaders:
    """The spec's `MCPContextHeaders`, counting how often the harness resolves headers (one entry per call)."""

    def __init__(self) -> None:
        self.resolved: list[str] = []
        self._headers = MCPContextHeaders(
            MCPContextHeadersConfig(
                headers={
                    'X-Run-ID': MCPContextHeaderBinding('context.run_id'),
                    'X-Tenant-ID': MCPContextHeaderBinding('identity.tenant_id'),
                }
            )
        )

    def __call__(self, context: Any) -> Any:
        self.resolved.append(context.run_id)
        return self._headers(context)


def knowledge(url: str, headers: CountingHeaders, **options: Any) -> ContextualMCP:
    return ContextualMCP(
        url, id='knowledge-server', **{'native': False, 'local': True, **options}, headers_factory=headers
    )


def bindings(tenant: str) -> RunBindings:
    identity = AgentIdentityRef(issuer='https://host.example', subject='svc-agent', tenant_id=tenant)
    return RunBindings(instance=AgentInstanceContext(identity=identity, agent_instance_id=f'agent-{tenant}'))


def script() -> StreamScript:
    return StreamScript(
        [
            [(SEARCH, {'query': 'run tenant headers', 'group': 'knowledge'})],
            [(CALL, {'group': 'knowledge', 'tool': 'whoami', 'arguments': {'delay': 0.2}})],
            [(CALL, {'group': 'knowledge', 'tool': 'read_doc', 'arguments': {'doc_id': 'setup'}})],
            'done',
        ]
    )


async def test_headers_resolve_once_per_run_and_concurrent_runs_get_their_own_replacement(
    kb_server: KnowledgeServer,
) -> None:
    kb_server.clear()
    headers = CountingHeaders()
    proxy = ToolProxyCapability(
        groups={
            'knowledge': ToolProxyGroup(
                source=knowledge(kb_server.url, headers), description="Search and read the tenant's knowledge base"
            )
        }
    )
    model = script()
    agent = HarnessBuilder().build(AgentSpec(), output_type=str, model=model.model, capabilities=(proxy,))
    results = await asyncio.gather(agent.run('x', bindings=bindings('t1')), agent.run('x', bindings=bindings('t2')))

    run_tenant = {}
    for result, tenant in zip(results, ('t1', 't2')):
        assert result.status == 'completed', result.failure
        messages = result.all_messages()
        entry = page_of(returns(messages, SEARCH)[0])['tools'][0]
        assert (entry['group'], entry['tool']) == ('knowledge', 'whoami')
        assert entry['instructions'] == [INSTRUCTIONS]  # the server's instructions come back with discovery
        whoami, doc = returns(messages, CALL)
        assert whoami.content == {'run': result.run_id, 'tenant': tenant}
        assert doc.content == 'Install with pip, then run scripts/bootstrap.'
        run_tenant[result.run_id] = tenant
    assert all(INSTRUCTIONS not in (info.instructions or '') for info in model.infos)  # ... not in the prompt

    # One header resolution per logical run, for each of the two runs.
    assert sorted(headers.resolved) == sorted(run_tenant)
    # Every request the server saw carries one run's own headers, and both runs reached it.
    recorded = kb_server.headers()
    assert recorded and {r['x-run-id'] for r in recorded} == set(run_tenant)
    assert all(r['x-tenant-id'] == run_tenant[r['x-run-id']] for r in recorded)


async def test_a_plan_selected_contextual_mcp_keeps_its_run_binding(kb_server: KnowledgeServer) -> None:
    kb_server.clear()
    headers = CountingHeaders()
    source = knowledge(kb_server.url, headers)
    definition = AgentDefinition(agent=AgentSpec(), output_type=str, model=script().model, capabilities=(source,))
    plan = ToolProxyPlan(
        groups={'knowledge': ToolProxySelection(description='Project knowledge base', capabilities=(source,))}
    )
    agent = HarnessBuilder().build(plan.apply(definition))
    result = await agent.run('x', bindings=bindings('t3'))
    assert result.status == 'completed', result.failure
    assert returns(result.all_messages(), CALL)[0].content == {'run': result.run_id, 'tenant': 't3'}
    assert headers.resolved == [result.run_id]
    assert {(r['x-run-id'], r['x-tenant-id']) for r in kb_server.headers()} == {(result.run_id, 't3')}


@pytest.mark.parametrize(
    'options', [{'native': True, 'local': True}, {'native': True, 'local': None}], ids=['native', 'native-fallback']
)
async def test_a_grouped_provider_native_source_is_rejected_with_what_to_change(
    kb_server: KnowledgeServer, options: dict[str, Any]
) -> None:
    kb_server.clear()
    proxy = ToolProxyCapability(
        groups={
            'knowledge': ToolProxyGroup(source=knowledge(kb_server.url, CountingHeaders(), **options), description='KB')
        }
    )
    agent = HarnessBuilder().build(AgentSpec(), output_type=str, model=script().model, capabilities=(proxy,))
    with pytest.raises(
        UserError,
        match=r"ToolProxy group 'knowledge' contributes provider-native tools .*Select native=False, local=True",
    ):
        await agent.run('x', bindings=bindings('t1'))


def test_a_grouped_source_with_defer_loading_is_rejected_with_what_to_change(kb_server: KnowledgeServer) -> None:
    source = knowledge(kb_server.url, CountingHeaders(), defer_loading=True)
    with pytest.raises(
        ValueError,
        match=r"ToolProxy group 'knowledge' \(ContextualMCP\) has defer_loading=True.*Remove defer_loading=True",
    ):
        ToolProxyCapability(groups={'knowledge': ToolProxyGroup(source=source, description='KB')})
    with pytest.raises(ValueError, match=r"'knowledge-server' with defer_loading=True.*Remove defer_loading=True"):
        ToolProxySelection(description='KB', capabilities=(source,))


async def test_model_recovery_attempts_reuse_the_runs_upstream_mcp(kb_server: KnowledgeServer) -> None:
    from a13n_harness import ModelRecoveryPolicy
    from pydantic_ai.exceptions import ModelHTTPError

    kb_server.clear()
    failed: list[bool] = []

    def fail_once(messages: Any, info: Any) -> Any:
        if not failed:
            failed.append(True)
            raise ModelHTTPError(503, 'scripted-model', 'temporarily unavailable')
        return [(CALL, {'group': 'knowledge', 'tool': 'whoami', 'arguments': {}})]

    headers = CountingHeaders()
    model = StreamScript(
        [
            [(CALL, {'group': 'knowledge', 'tool': 'whoami', 'arguments': {}})],
            fail_once,  # the provider fails once; the harness recovers the run with a new attempt
            'done',
        ]
    )
    proxy = ToolProxyCapability(
        groups={'knowledge': ToolProxyGroup(source=knowledge(kb_server.url, headers), description='KB')}
    )
    agent = HarnessBuilder().build(
        AgentSpec(),
        output_type=str,
        model=model.model,
        capabilities=(proxy,),
        model_recovery=ModelRecoveryPolicy(enabled=True, backoff_initial_seconds=0),
    )
    result = await agent.run('x', bindings=bindings('t4'))
    assert result.status == 'completed', result.failure
    assert failed == [True]
    calls = returns(result.all_messages(), CALL)
    assert len(calls) == 2 and all(c.content == {'run': result.run_id, 'tenant': 't4'} for c in calls)
    assert headers.resolved == [result.run_id]  # resolved once for the logical run, not per attempt
