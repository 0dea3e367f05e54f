"""`toolproxy.*` attributes on the control spans of instrumented runs (OpenTelemetry's in-memory exporter)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import UsageLimits
from support import CALL, SEARCH, Script, page_of, returns_by_id
from tools_fixtures import billing_toolset, crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy.controls.spans import ATTRIBUTES, REFUSALS

QUERY = 'customer display name'


def proxy() -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={
            'crm': ToolProxyGroup(source=crm_toolset(), description='Customer records.'),
            'billing': ToolProxyGroup(source=billing_toolset(), description='Invoices and refunds.'),
        }
    )


def instrumented(script: Script, include_content: bool = True) -> tuple[Agent[Any, str], InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=include_content)
    return Agent(script.model, capabilities=[proxy(), Instrumentation(settings=settings)], retries=20), exporter


def control_spans(exporter: InMemorySpanExporter) -> dict[str, dict[str, Any]]:
    """Each control span's attributes, by the tool call id it ran for."""
    out: dict[str, dict[str, Any]] = {}
    for span in exporter.get_finished_spans():
        attributes = dict(span.attributes or {})
        if attributes.get('gen_ai.tool.name') in (SEARCH, CALL):
            out[str(attributes['gen_ai.tool.call.id'])] = attributes
    return out


def facts(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in attributes.items() if k.startswith('toolproxy.')}


STEPS = [
    [(SEARCH, {'query': QUERY, 'limit': 2})],
    [(SEARCH, {'query': 'refund', 'group': 'billing'})],
    [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
    [(SEARCH, {'query': 'x', 'group': 'nope'})],
    [(SEARCH, {'query': 'x', 'limit': 0})],
    [(SEARCH, {'query': 'x', 'offset': -1})],
    [(SEARCH, {'query': 'x' * 9000})],
    [(CALL, {'group': 'nope', 'tool': 'customer_name', 'arguments': {}})],
    [(CALL, {'group': 'crm', 'tool': 'customer_nam', 'arguments': {}})],
    [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 'not a number'}})],
    [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': '[1, 2]'})],
    [(CALL, {'group': 'crm', 'tool': 'update_customer_email', 'arguments': {'customer_id': 1, 'email': 'secret'}})],
    [(CALL, {'group': 'crm', 'tool': 'explode', 'arguments': {'reason': 'disk'}})],
]


async def test_search_and_call_spans_carry_the_facts() -> None:
    script = Script(list(STEPS))
    agent, exporter = instrumented(script)
    result = await agent.run('go')
    spans = control_spans(exporter)
    by_id = returns_by_id(result.all_messages())
    ids = [f'call_{n}_0' for n in range(1, len(STEPS) + 1)]
    assert set(ids) <= set(spans)

    first = facts(spans[ids[0]])
    page = page_of(by_id[ids[0]])
    assert first == {
        'toolproxy.control': 'search',
        'toolproxy.search.ranking': 'keyword',
        'toolproxy.search.query_bytes': len(QUERY),
        'toolproxy.search.query': QUERY,
        'toolproxy.search.offset': 0,
        'toolproxy.search.limit': 2,
        'toolproxy.search.total': page['total'],
        'toolproxy.search.page.groups': [e['group'] for e in page['tools']],
        'toolproxy.search.page.tools': [e['tool'] for e in page['tools']],
        'toolproxy.search.page.count': 2,
        'toolproxy.search.page.bytes': len(by_id[ids[0]].model_response_str().encode()),
        'toolproxy.search.next_offset': 2,
    }
    assert first['toolproxy.search.page.tools'][0] == 'customer_name'
    second = facts(spans[ids[1]])
    assert second['toolproxy.search.group'] == 'billing'
    assert 'toolproxy.search.limit' not in second
    assert set(second['toolproxy.search.page.groups']) == {'billing'}
    if page_of(by_id[ids[1]])['next_offset'] is None:
        assert 'toolproxy.search.next_offset' not in second

    call = facts(spans[ids[2]])
    assert call == {'toolproxy.control': 'call', 'toolproxy.call.group': 'crm', 'toolproxy.call.tool': 'customer_name'}

    refusals = [facts(spans[i]).get('toolproxy.refusal') for i in ids[3:]]
    assert refusals == [
        'unknown-group',
        'invalid-limit',
        'invalid-offset',
        'invalid-query',
        'unknown-group',
        'unknown-tool',
        'invalid-arguments',
        'invalid-arguments',
        'target-retry',
        'target-failed',
    ]
    assert all(code in REFUSALS for code in refusals)
    assert all(key in ATTRIBUTES for attributes in spans.values() for key in facts(attributes))
    # a refused call names the resolved target when there is one, and the model's text with content on
    retried = facts(spans[ids[11]])
    assert (retried['toolproxy.call.group'], retried['toolproxy.call.tool']) == ('crm', 'update_customer_email')
    assert retried['toolproxy.refusal.message'] == by_id[ids[11]].model_response_str(wrap_if_error=False)
    assert 'toolproxy.call.tool' not in facts(spans[ids[8]])  # customer_nam resolves to nothing


async def test_without_content_no_query_text_and_no_arguments_reach_any_span() -> None:
    secret_query = 'zebra-quasar customer name'
    steps = [
        [(SEARCH, {'query': secret_query})],
        [
            (
                CALL,
                {'group': 'crm', 'tool': 'update_customer_email', 'arguments': {'customer_id': 7, 'email': 'zebra-x'}},
            )
        ],
        [(SEARCH, {'query': 'zebra-quasar', 'group': 'nope'})],
    ]
    agent, exporter = instrumented(Script(steps), include_content=False)
    await agent.run('go')
    spans = control_spans(exporter)
    search, call, refused = (facts(spans[f'call_{n}_0']) for n in (1, 2, 3))
    assert search['toolproxy.search.query_bytes'] == len(secret_query)
    assert 'toolproxy.search.query' not in search
    assert search['toolproxy.search.page.tools'][0] == 'customer_name'
    assert call['toolproxy.refusal'] == 'target-retry' and 'toolproxy.refusal.message' not in call
    assert refused['toolproxy.refusal'] == 'unknown-group' and 'toolproxy.refusal.message' not in refused
    every_value = json.dumps(
        [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
        + [s.name for s in exporter.get_finished_spans()],
        default=list,
    )
    assert 'zebra' not in every_value


async def test_usage_limit_refusal_is_recorded() -> None:
    script = Script([[(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})]])
    agent, exporter = instrumented(script)
    with pytest.raises(UsageLimitExceeded):
        await agent.run('go', usage_limits=UsageLimits(tool_calls_limit=1))
    [attributes] = control_spans(exporter).values()
    assert facts(attributes)['toolproxy.refusal'] == 'usage-limit'
    assert facts(attributes)['toolproxy.call.tool'] == 'customer_name'


async def test_instrument_all_records_the_facts_too() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = Script([[(SEARCH, {'query': QUERY})]])
    agent = Agent(script.model, capabilities=[proxy()])
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    try:
        await agent.run('go')
    finally:
        Agent.instrument_all(False)
    [attributes] = control_spans(exporter).values()
    assert facts(attributes)['toolproxy.search.page.tools'][0] == 'customer_name'


async def test_an_uninstrumented_run_annotates_no_host_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = Script([[(SEARCH, {'query': QUERY})], [(CALL, {'group': 'crm', 'tool': 'nope', 'arguments': {}})]])
    agent = Agent(script.model, capabilities=[proxy()])
    with provider.get_tracer('host').start_as_current_span('host request'):
        assert trace.get_current_span().is_recording()
        await agent.run('go')
    spans: list[ReadableSpan] = list(exporter.get_finished_spans())
    assert [s.name for s in spans] == ['host request']
    assert not [k for k in (spans[0].attributes or {}) if k.startswith('toolproxy.')]


async def test_a_hybrid_search_records_its_ranking() -> None:
    from embedding_fixtures import BagOfWordsModel

    from pydantic_ai_toolproxy import ToolProxyConfig

    def hybrid_agent(model: BagOfWordsModel) -> tuple[Agent[Any, str], InMemorySpanExporter]:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        config = ToolProxyConfig(embedder=model, embedding_cache=None)
        capability = ToolProxyCapability(
            groups={'crm': ToolProxyGroup(source=crm_toolset(), description='Customer records.')}, config=config
        )
        script = Script([[(SEARCH, {'query': QUERY})]])
        instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))
        return Agent(script.model, capabilities=[capability, instrumentation]), exporter

    agent, exporter = hybrid_agent(BagOfWordsModel(dimensions=64))
    await agent.run('go')
    [attributes] = control_spans(exporter).values()
    assert facts(attributes)['toolproxy.search.ranking'] == 'hybrid'
    assert facts(attributes)['toolproxy.search.tools_with_vectors'] == 3
    assert 'toolproxy.search.ranking_reason' not in facts(attributes)

    agent, exporter = hybrid_agent(BagOfWordsModel(dimensions=64, query_fail=ConnectionError('down')))
    await agent.run('go')
    [attributes] = control_spans(exporter).values()
    assert facts(attributes)['toolproxy.search.ranking'] == 'keyword'
    assert facts(attributes)['toolproxy.search.ranking_reason'] == 'embedder-error'
