"""Construction-time validation and preparation-time errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import CombinedToolset, FunctionToolset
from support import Script
from tools_fixtures import crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup


def group(source: Any = None, description: str = 'Customer records') -> ToolProxyGroup[Any]:
    return ToolProxyGroup(source=source if source is not None else crm_toolset(), description=description)


@pytest.mark.parametrize('name', ['9crm', 'a__b', 'x' * 33, '', 'crm tools', 'crm.x', 'é'])
def test_invalid_group_names_fail_at_construction_naming_the_value(name: str) -> None:
    with pytest.raises(ValueError) as exc:
        ToolProxyCapability(groups={name: group()})
    assert repr(name)[1:-1] in str(exc.value)


@pytest.mark.parametrize('name', ['crm', 'A', 'a-b_c', 'x' * 32, 'g1'])
def test_valid_group_names(name: str) -> None:
    ToolProxyCapability(groups={name: group()})


@pytest.mark.parametrize('description', ['', '   \n', 'x' * 513])
def test_invalid_descriptions_name_the_group(description: str) -> None:
    with pytest.raises(ValueError, match="'crm'"):
        ToolProxyCapability(groups={'crm': group(description=description)})


def test_description_of_512_characters_is_accepted() -> None:
    ToolProxyCapability(groups={'crm': group(description='é' * 512)})


@pytest.mark.parametrize(
    ('kwargs', 'needle'),
    [
        ({'search_name': 'bad name'}, 'bad name'),
        ({'call_name': ''}, 'call_name'),
        ({'search_name': 'same', 'call_name': 'same'}, 'same'),
        ({'max_results': 0}, 'max_results'),
        ({'max_results': 101}, '101'),
        ({'max_search_bytes': 1023}, '1023'),
        ({'max_search_bytes': 32_769}, '32769'),
        ({'max_results': 10**30}, 'max_results'),
        ({'max_results': True}, 'max_results'),
        ({'search_name': 'x' * 65}, 'search_name'),
    ],
)
def test_invalid_config(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError) as exc:
        ToolProxyConfig(**kwargs)
    assert needle in str(exc.value)


def test_config_bounds_accepted() -> None:
    ToolProxyConfig(max_results=1, max_search_bytes=1024)
    ToolProxyConfig(
        max_results=100, max_search_bytes=32_768, search_name='find_operations', call_name='invoke_operation'
    )


def test_bad_group_types() -> None:
    with pytest.raises(TypeError):
        ToolProxyGroup(source='not a toolset', description='x')  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolProxyCapability(groups=[('crm', group())])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'a' and 'b'"):
        source = crm_toolset()
        ToolProxyCapability(groups={'a': group(source), 'b': group(source)})


async def run_once(caps: list[Any], tools: list[Any] | None = None) -> None:
    await Agent(Script(['ok']).model, tools=tools or [], capabilities=caps).run('x')


async def test_duplicate_local_names_in_a_group_fail_preparation_naming_both() -> None:
    def customer_name(customer_id: int) -> str:
        """Another customer_name."""
        return ''

    source = CombinedToolset([crm_toolset(), FunctionToolset([customer_name], id='legacy')])
    with pytest.raises(UserError) as exc:
        await run_once([ToolProxyCapability(groups={'crm': group(source)})])
    assert 'customer_name' in str(exc.value) and "'legacy'" in str(exc.value)


async def test_canonical_name_equal_to_another_tool_fails_naming_both() -> None:
    def crm__customer_name() -> str:
        """An ungrouped tool that happens to use a canonical name."""
        return ''

    with pytest.raises(UserError) as exc:
        await run_once([ToolProxyCapability(groups={'crm': group()})], tools=[crm__customer_name])
    assert 'crm__customer_name' in str(exc.value) and "ToolProxy group 'crm'" in str(exc.value)


async def test_control_name_equal_to_existing_tool_fails_naming_both() -> None:
    def call_proxy_tool() -> str:
        """An ungrouped tool with the control's name."""
        return ''

    with pytest.raises(UserError) as exc:
        await run_once([ToolProxyCapability(groups={'crm': group()})], tools=[call_proxy_tool])
    assert 'call_proxy_tool' in str(exc.value) and 'ToolProxy controls' in str(exc.value)


def _external(x: int) -> int:
    """External."""
    return x


async def test_deferred_member_fails_preparation_with_advice() -> None:
    with pytest.raises(UserError) as exc:
        await run_once(
            [ToolProxyCapability(groups={'g': group(FunctionToolset([Tool(_external, defer_loading=True)]))})]
        )
    assert 'defer_loading=True' in str(exc.value) and 'ungrouped' in str(exc.value) and "'g'" in str(exc.value)


async def test_external_and_native_members_are_rejected() -> None:
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import ExternalToolset

    external = ExternalToolset([ToolDefinition(name='client_op', parameters_json_schema={'type': 'object'})])
    with pytest.raises(UserError, match='external'):
        await run_once([ToolProxyCapability(groups={'g': group(external)})])

    from dataclasses import replace

    async def as_native_fallback(ctx: Any, tool_def: ToolDefinition) -> ToolDefinition:
        return replace(tool_def, unless_native='web_search')

    native = FunctionToolset([Tool(_external, prepare=as_native_fallback)])
    with pytest.raises(UserError, match='provider-native'):
        await run_once([ToolProxyCapability(groups={'g': group(native)})])
