"""One implementation each: control schemas derived from the control signatures (bytes unchanged), the index
record, and failure reasons carried as data beside the model-facing text (read by `toolproxy check`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy._messages import FailureReason
from pydantic_ai_toolproxy.cli._probe import probe
from pydantic_ai_toolproxy.controls.call import _interrupted_by, mcp_error_classes
from pydantic_ai_toolproxy.grouping.directory import index_record
from pydantic_ai_toolproxy.grouping.members import unsupported_member

SEARCH_DEFAULT = (
    '{"type":"object","properties":{"query":{"type":"string","default":"","description":"Keywords naming the action or '
    'object, e.g. \\"customer name\\". Empty browses."},"group":{"anyOf":[{"type":"string","enum":["crm","billing"]},'
    '{"type":"null"}],"default":null,"description":"Restrict the search to one group; omit to search all groups."},'
    '"limit":{"anyOf":[{"type":"integer","minimum":1,"maximum":10},{"type":"null"}],"default":null,"description":'
    '"Results per page (default 5, at most 10)."},"offset":{"type":"integer","minimum":0,"default":0,"description":'
    '"Position to start from: 0, or the `next_offset` of the previous page."}},"additionalProperties":false}'
)
"""The search control's advertised schema before it was derived (hand-written dict, commit 087cbd2), groups crm, billing."""
SEARCH_MAX_3 = SEARCH_DEFAULT.replace('"maximum":10', '"maximum":3').replace(
    '(default 5, at most 10)', '(default 3, at most 3)'
)
CALL = (
    '{"type":"object","properties":{"group":{"type":"string","enum":["crm","billing"],"description":"The group of the '
    'tool."},"tool":{"type":"string","description":"The local tool name, as returned by search."},"arguments":{"type":'
    '"object","additionalProperties":true,"description":"Arguments matching the tool\'s parameters_json_schema."}},'
    '"required":["group","tool","arguments"],"additionalProperties":false}'
)
REGISTERED_SEARCH = (
    '{"additionalProperties":false,"properties":{"query":{"default":"","type":"string"},"group":{"anyOf":[{"type":'
    '"string"},{"type":"null"}],"default":null},"limit":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null},'
    '"offset":{"default":0,"type":"integer"}},"type":"object"}'
)
REGISTERED_CALL = (
    '{"additionalProperties":false,"properties":{"group":{"type":"string"},"tool":{"type":"string"},"arguments":'
    '{"default":null}},"required":["group","tool"],"type":"object"}'
)
"""What the `ToolManager` registers (and CodeAct's runner shows): the signatures' own schemas, unchanged."""


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    return 'Ada'


def invoice_total(invoice_id: int) -> float:
    """Total of one invoice."""
    return 1.0


def _compact(schema: Any) -> str:
    return json.dumps(schema, separators=(',', ':'), ensure_ascii=False)


@pytest.mark.parametrize(
    ('config', 'search'), [(ToolProxyConfig(), SEARCH_DEFAULT), (ToolProxyConfig(max_results=3), SEARCH_MAX_3)]
)
async def test_the_advertised_control_schemas_are_byte_identical_to_the_hand_written_ones(
    config: ToolProxyConfig, search: str
) -> None:
    proxy = ToolProxyCapability(
        groups={
            'crm': ToolProxyGroup(source=FunctionToolset([customer_name]), description='Customer records'),
            'billing': ToolProxyGroup(source=FunctionToolset([invoice_total]), description='Invoices'),
        },
        config=config,
    )
    seen: list[AgentInfo] = []
    registered: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(model), capabilities=[proxy])
    await agent.run('go')
    offered = {t.name: _compact(t.parameters_json_schema) for t in seen[0].function_tools}
    assert offered == {'search_proxy_tools': search, 'call_proxy_tool': CALL}
    for tool in proxy._controls.tools.values():
        registered[tool.name] = _compact(tool.function_schema.json_schema)
    assert registered == {'search_proxy_tools': REGISTERED_SEARCH, 'call_proxy_tool': REGISTERED_CALL}


def test_index_record_is_the_record_sync_upserts() -> None:
    assert index_record('ops___purge', 'ops', 'Purge.', {'type': 'object'}) == (
        'ops___purge',
        'ops',
        '_purge',
        'Purge.',
        {'type': 'object'},
    )
    assert index_record('ops___purge', 'ops_', None, {})[2:4] == ('purge', '')


def test_unsupported_members_carry_a_kind_beside_the_text() -> None:
    native = unsupported_member(ToolDefinition(name='t', unless_native='web_search'))
    assert native is not None and native.kind == 'provider-native' and 'provider-native tool' in native.text
    deferred = unsupported_member(ToolDefinition(name='t', defer_loading=True))
    assert deferred is not None and deferred.kind == 'deferred-loading'
    assert unsupported_member(ToolDefinition(name='t')) is None


def test_mcp_errors_are_recognised_by_class_not_by_name() -> None:
    from mcp.shared.exceptions import MCPError as SdkError
    from pydantic_ai.mcp import MCPError as PydanticAIError

    classes = mcp_error_classes()
    assert SdkError in classes and PydanticAIError in classes
    assert _interrupted_by(RuntimeError('wrapped')) is None
    for error in (SdkError(-32001, 'request timed out'), PydanticAIError('connection closed', -32000)):
        wrapper = RuntimeError('retry')
        wrapper.__cause__ = error
        assert _interrupted_by(wrapper) is error

    class MCPError(Exception):  # same name, not an MCP error
        code = -32001

    assert _interrupted_by(MCPError()) is None
    assert _interrupted_by(SdkError(-32602, 'invalid params')) is None  # not an interrupted-call code


async def test_a_failed_search_carries_its_reason_to_the_probe() -> None:
    def big(text: str) -> str:
        return text

    big.__doc__ = 'A tool whose description is far too long. ' * 40
    proxy = ToolProxyCapability(
        groups={'crm': ToolProxyGroup(source=FunctionToolset([big]), description='Customer records')},
        config=ToolProxyConfig(max_search_bytes=1024),
    )
    run = await probe(capabilities=[proxy], calls=lambda _: [('search_proxy_tools', {'query': ''})])
    (part,) = run.returns.values()
    assert part.outcome == 'failed' and 'cannot fit in one search page' in part.model_response_str()
    reason = run.failures['probe-0']
    assert reason == FailureReason('oversized-entry', 'crm', 'big', entry_bytes=reason.entry_bytes, budget=1024)
    assert reason.entry_bytes is not None and reason.entry_bytes > 1024
    assert f'is {reason.entry_bytes} bytes' in part.model_response_str()


def test_each_advertised_schema_is_a_fresh_copy() -> None:
    from pydantic_ai_toolproxy.controls.toolset import with_groups

    proxy = ToolProxyCapability(
        groups={'crm': ToolProxyGroup(source=FunctionToolset([customer_name]), description='Customer records')}
    )
    controls = proxy._controls
    first = with_groups(controls.search_schema, controls.search_groups, ['crm', 'billing'])
    first['properties']['limit']['anyOf'][0]['maximum'] = 99  # a model profile transforming its schema in place
    first['properties']['group']['anyOf'][0]['enum'].append('x')
    assert _compact(with_groups(controls.search_schema, controls.search_groups, ['crm', 'billing'])) == SEARCH_DEFAULT
