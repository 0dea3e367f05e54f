"""Limits of the controls themselves: the derived control-schema cache is bounded, and a `timeout` a host hook sets
on every tool (the controls included) is enforced on the targets, not on the call control.

Without the exemption, the call control's own timeout (it wraps the target, so it expires first) would answer with
Pydantic AI's plain "Timed out after N seconds." retry on the envelope, charged to the call control, with no word
that the target may have had effects. With it, the target's own timeout (the same hook sets it on members) gives the
uncertain-outcome failure docs/reliability.md describes. The search control keeps a timeout set on it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import CALL, SEARCH, Script, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy.controls import toolset as _controls
from pydantic_ai_toolproxy.controls.toolset import MAX_DERIVED

pytestmark = pytest.mark.anyio

UNCERTAIN = 'Its outcome is uncertain'


class TimeoutEverything(AbstractCapability[Any]):
    """A host hook that sets `timeout` on every tool it is shown, or only on those named in `only`."""

    def __init__(self, seconds: float, only: tuple[str, ...] = ()) -> None:
        self.seconds = seconds
        self.only = only

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [replace(t, timeout=self.seconds) if not self.only or t.name in self.only else t for t in tool_defs]


def payments(seconds: float) -> FunctionToolset[Any]:
    async def transfer(amount: int) -> str:
        """Move money; takes `seconds`."""
        await asyncio.sleep(seconds)
        return f'moved {amount}'

    return FunctionToolset([transfer])


def proxied(source: FunctionToolset[Any]) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(groups={'pay': ToolProxyGroup(source=source, description='Payments')})


TRANSFER = (CALL, {'group': 'pay', 'tool': 'transfer', 'arguments': {'amount': 5}})


async def test_a_timeout_on_every_tool_expires_on_the_target_as_an_uncertain_failure() -> None:
    script = Script([[TRANSFER]])
    started = time.monotonic()
    result = await Agent(script.model, capabilities=[proxied(payments(3600)), TimeoutEverything(0.3)]).run('go')
    assert time.monotonic() - started < 30
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    text = part.model_response_str(wrap_if_error=False)
    assert part.outcome == 'failed' and UNCERTAIN in text
    assert "'transfer' in group 'pay' did not complete (TimeoutError: Timed out after 0.3 seconds.)" in text


async def test_a_timeout_set_on_the_call_control_alone_does_not_cut_off_its_target() -> None:
    script = Script([[TRANSFER]])
    hook = TimeoutEverything(0.05, only=(CALL,))
    result = await Agent(script.model, capabilities=[proxied(payments(0.3)), hook]).run('go')
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert part.outcome == 'success' and part.content == 'moved 5'


async def test_the_search_control_keeps_a_timeout_set_on_it() -> None:
    """Search has no side effects: a timeout set on it stays Pydantic AI's, and a page that is fast enough arrives."""
    script = Script([[(SEARCH, {'query': 'move money'})]])
    hook = TimeoutEverything(30, only=(SEARCH,))
    result = await Agent(script.model, capabilities=[proxied(payments(0)), hook]).run('go')
    (part,) = [p for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert part.outcome == 'success' and 'transfer' in str(part.content)
    assert script.tool_def(SEARCH).timeout == 30 and script.tool_def(CALL).timeout is None


def test_the_derived_control_schema_cache_is_bounded() -> None:
    for i in range(3 * MAX_DERIVED):
        ToolProxyCapability(
            groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')},
            config=ToolProxyConfig(search_name=f'find_{i}', call_name=f'invoke_{i}'),
        )
        assert len(_controls._DERIVED) <= 2 * MAX_DERIVED
    assert len(_controls._DERIVED) == 2 * MAX_DERIVED


def test_an_evicted_config_is_derived_again_identically_and_a_recent_one_stays() -> None:
    recent = ToolProxyConfig(max_results=7)
    first = ToolProxyCapability(groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')}, config=recent)
    schema = first._controls.search_schema
    for i in range(MAX_DERIVED - 1):
        ToolProxyCapability(
            groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')},
            config=ToolProxyConfig(search_name=f'other_{i}'),
        )
        # Used again: it is the most recently used, so it is never the one evicted.
        ToolProxyCapability(groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')}, config=recent)
    again = ToolProxyCapability(groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')}, config=recent)
    assert again._controls.search_schema is schema  # still cached
    for i in range(3 * MAX_DERIVED):
        ToolProxyCapability(
            groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')},
            config=ToolProxyConfig(search_name=f'flood_{i}'),
        )
    evicted = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=FunctionToolset(), description='G')}, config=recent
    )
    assert evicted._controls.search_schema is not schema and evicted._controls.search_schema == schema
