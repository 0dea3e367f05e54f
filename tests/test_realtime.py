"""Realtime sessions (`agent.realtime(model).session()`) never call `before_model_request`, where the proxy hides its
members and adds the group enum, and fix the advertised tools at connect. The proxy refuses such a session at
session start with a `UserError` naming realtime, before anything connects or is advertised.

The realtime model here is scripted: a real `RealtimeModel` subclass whose connection records what the session
advertised and ends at once (Pydantic AI's own tests script a `RealtimeConnection` the same way).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters

realtime = pytest.importorskip('pydantic_ai.realtime', reason='this Pydantic AI has no realtime sessions')
codec = pytest.importorskip('pydantic_ai.realtime.codec')
from support import CALL, SEARCH, Script, returns  # noqa: E402
from tools_fixtures import crm_toolset  # noqa: E402

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup  # noqa: E402


class ScriptedConnection(codec.RealtimeConnection):  # type: ignore[misc,name-defined]
    """A connection whose provider says nothing and hangs up at once; it records what the session sends."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    async def send(self, content: Any) -> None:
        self.sent.append(content)

    async def frames(self) -> AsyncIterator[Any]:
        return
        yield


class ScriptedRealtimeModel(realtime.RealtimeModel):  # type: ignore[misc,name-defined]
    """Records each connect's advertised function tools."""

    def __init__(self) -> None:
        super().__init__()
        self.connects: list[list[str]] = []

    @property
    def model_name(self) -> str:
        return 'scripted-realtime'

    @property
    def system(self) -> str:
        return 'scripted'

    @asynccontextmanager
    async def _connect(self, parameters: ModelRequestParameters) -> AsyncIterator[ScriptedConnection]:
        self.connects.append([t.name for t in parameters.function_tools])
        yield ScriptedConnection()

    def connect(
        self,
        *,
        messages: Sequence[ModelMessage],
        model_settings: Any,
        model_request_parameters: ModelRequestParameters,
    ) -> Any:
        return self._connect(model_request_parameters)


def lookup_order(order_id: int) -> str:
    """Look up an order by its ID."""
    return f'order {order_id}'


async def test_the_scripted_model_connects_and_advertises_the_agents_tools() -> None:
    model = ScriptedRealtimeModel()
    agent = Agent(tools=[lookup_order], toolsets=[crm_toolset()])
    async with agent.realtime(model).session():
        pass
    [advertised] = model.connects
    assert 'lookup_order' in advertised and 'customer_name' in advertised


async def test_a_realtime_session_with_the_proxy_is_refused_at_session_start_naming_realtime() -> None:
    model = ScriptedRealtimeModel()
    proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=crm_toolset(), description='CRM')})
    agent = Agent(tools=[lookup_order], capabilities=[proxy])
    with pytest.raises(UserError, match='realtime') as refused:
        async with agent.realtime(model).session():
            pytest.fail('the session must not open')  # pragma: no cover
    assert model.connects == []  # refused before connecting: nothing was advertised
    message = str(refused.value)
    assert 'ToolProxyCapability' in message and 'agent.realtime' in message
    assert len(message) <= 600

    # The same agent keeps working in ordinary runs (the refusal is the session's, not the proxy's).
    script = Script(
        [
            [(SEARCH, {'query': 'customer name'})],
            [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            'done',
        ]
    )
    result = await agent.run('x', model=script.model)
    assert [p.outcome for p in returns(result.all_messages())] == ['success', 'success']


async def test_a_proxy_without_groups_does_not_refuse_a_realtime_session() -> None:
    model = ScriptedRealtimeModel()
    agent = Agent(tools=[lookup_order], capabilities=[ToolProxyCapability(groups={})])
    # Pydantic AI warns about any capability defining hooks a session never calls; an empty proxy has nothing to hide.
    with pytest.warns(UserWarning, match='before_model_request'):
        async with agent.realtime(model).session():
            pass
    assert model.connects == [['lookup_order']]
