"""The two control tools and the schemas advertised for them each step.

The prepared controls include a current group enum, and only current group summaries are placed in the control
descriptions: a group without members this step is neither offered nor described.

One signature per control says everything about its parameters. Pydantic AI registers and validates the control
from it as for any function tool (`Tool(...)`; validation is lenient on purpose: the control checks bounds itself
and answers with a short retry). The schema the model is shown is derived from the same signature
(`advertised_schema`): each parameter's `Annotated` metadata carries an `Advertised` marker (its description, and
the stricter type shown to the model where it differs, e.g. the bounds of `limit`), pydantic renders the JSON
schema, and the current group enum is spliced in per step (`with_groups`). Pydantic ignores the markers when it
builds the validator and the registered schema, so those stay the signature's own.
"""

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_ai.tools import RunContext, Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._interop import CONTROLS_POLICY, ControlsPolicy, interop_for
from .._runtime import ProxyRuntime
from ..config import ToolProxyConfig
from . import search as _search
from .call import run_call
from .instructions import call_description, group_summary, search_description
from .spans import called, searched

__all__ = ('Advertised', 'ControlToolset', 'advertised_controls', 'advertised_schema', 'with_groups')


@dataclass(frozen=True)
class Advertised:
    """`Annotated` metadata of a control parameter: how the model is shown it (see the module docstring).

    Attributes:
        description: The parameter's description in the advertised schema.
        shown_as: The type the advertised schema states, when stricter than the validated annotation (bounds the
            control checks itself, an object the control also accepts as a JSON string); None: the annotation.
        required: Advertised as required although the signature has a default (the control accepts it missing).
        groups: The parameter names a group: the current groups are spliced in as its `enum` each step.
    """

    description: str
    shown_as: Any = None
    required: bool = False
    groups: bool = False


_KEY_ORDER = {
    key: i
    for i, key in enumerate(
        ('type', 'enum', 'minimum', 'maximum', 'anyOf', 'properties', 'required', 'additionalProperties', 'default')
    )
}
"""Key order of the advertised schemas (the bytes the model sees): type first, description last."""


class _AdvertisedSchema(GenerateJsonSchema):
    """Pydantic's JSON schema without titles, keys in `_KEY_ORDER` (then `description`, then any other)."""

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        ordered: JsonSchemaValue = self._ordered(value, parent_key)
        return ordered

    def _ordered(self, value: Any, parent_key: str | None) -> Any:
        if parent_key in ('default', 'enum', 'const', 'examples'):  # values, not schemas: as they are
            return value
        if isinstance(value, dict):
            keys = list(value) if parent_key == 'properties' else sorted(value, key=self._rank)
            return {k: self._ordered(value[k], k) for k in keys if k != 'title' or parent_key == 'properties'}
        if isinstance(value, list):
            return [self._ordered(item, parent_key) for item in value]
        return value

    @staticmethod
    def _rank(key: str) -> tuple[int, str]:
        return (_KEY_ORDER.get(key, len(_KEY_ORDER) + (key != 'description')), key)


def _parameters(function: Callable[..., Any]) -> list[tuple[str, Any, Advertised, Any]]:
    """`(name, validated annotation, Advertised marker, default or inspect.Parameter.empty)` of each parameter after
    the `RunContext`, in signature order.

    Raises:
        TypeError: a parameter without an `Advertised` marker (every control parameter must say how it is shown).
    """
    hints = get_type_hints(function, include_extras=True)
    out: list[tuple[str, Any, Advertised, Any]] = []
    for name, parameter in list(inspect.signature(function).parameters.items())[1:]:
        hint = hints[name]
        markers = [m for m in get_args(hint)[1:] if isinstance(m, Advertised)] if get_origin(hint) is Annotated else []
        if not markers:
            raise TypeError(f'Control parameter {name!r} of {function.__name__} has no Advertised(...) marker.')
        out.append((name, get_args(hint)[0], markers[0], parameter.default))
    return out


def advertised_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema the model is shown for a control function, from its signature (without the group enum).

    Each parameter is rendered by pydantic as its marker's `shown_as` type (else its annotation) with the marker's
    description and the signature's default (none when the marker says `required`); extra keys are refused
    (`additionalProperties: false`), as Pydantic AI registers function tools.
    """
    fields: dict[str, Any] = {}
    for name, annotation, marker, default in _parameters(function):
        shown = marker.shown_as if marker.shown_as is not None else annotation
        value = ... if marker.required or default is inspect.Parameter.empty else default
        fields[name] = (Annotated[shown, Field(description=marker.description)], value)
    model = create_model(function.__name__, __config__=ConfigDict(extra='forbid'), **fields)
    schema: dict[str, Any] = model.model_json_schema(schema_generator=_AdvertisedSchema)
    return schema


def group_parameters(function: Callable[..., Any]) -> tuple[str, ...]:
    """The names of the parameters whose marker says `groups=True`."""
    return tuple(name for name, _, marker, _ in _parameters(function) if marker.groups)


def _fresh(node: Any) -> Any:
    """A copy of a JSON-like value (dicts and lists copied all the way down): every request gets its own schema."""
    if isinstance(node, dict):
        return {key: _fresh(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_fresh(item) for item in node]
    return node


def with_groups(schema: dict[str, Any], parameters: Sequence[str], groups: Sequence[str]) -> dict[str, Any]:
    """A fresh copy of `schema` with `enum: groups` spliced into each named parameter (into its string member when
    it is an `anyOf`, e.g. `str | None`), right after that member's `type`. `schema` itself is not changed, and
    the copy shares no dict or list with it (a model profile may transform the schema it is given in place)."""

    def spliced(node: dict[str, Any]) -> dict[str, Any]:
        if 'anyOf' in node:
            return {**node, 'anyOf': [spliced(m) if m.get('type') == 'string' else _fresh(m) for m in node['anyOf']]}
        out: dict[str, Any] = {}
        for key, value in node.items():
            out[key] = _fresh(value)
            if key == 'type':
                out['enum'] = list(groups)
        return out

    properties = {name: spliced(p) if name in parameters else _fresh(p) for name, p in schema['properties'].items()}
    return {key: properties if key == 'properties' else _fresh(value) for key, value in schema.items()}


MAX_DERIVED = 64
"""Configs whose control schemas are kept (`_DERIVED`; an entry's size: docs/reliability.md). Past that, the least recently
used config is forgotten and derived again when a surface with it is built."""

_DERIVED: dict[tuple[ToolProxyConfig, str], tuple[dict[str, Any], tuple[str, ...]]] = {}
"""`(advertised schema, group parameters)` per config and control, least recently used first: the markers depend on
the config only, so each config's schemas are derived once (pydantic builds a model for it), and
at most `MAX_DERIVED` configs (times two controls) are kept."""


def _derived(config: ToolProxyConfig, function: Callable[..., Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    key = (config, function.__name__)
    found = _DERIVED.pop(key, None)  # re-inserted below: the most recently used is last
    if found is None:
        found = (advertised_schema(function), group_parameters(function))
        while len(_DERIVED) >= 2 * MAX_DERIVED:
            try:
                del _DERIVED[next(iter(_DERIVED))]
            except (StopIteration, KeyError, RuntimeError):  # emptied or changed by another thread
                break
    _DERIVED[key] = found
    return found


class ControlToolset(FunctionToolset[Any]):
    """A `FunctionToolset` holding the search and call controls of one proxy surface."""

    def __init__(self, runtime: ProxyRuntime) -> None:
        config = runtime.config

        async def search(
            ctx: RunContext[Any],
            query: Annotated[
                str, Advertised('Keywords naming the action or object, e.g. "customer name". Empty browses.')
            ] = '',
            group: Annotated[
                str | None, Advertised('Restrict the search to one group; omit to search all groups.', groups=True)
            ] = None,
            limit: Annotated[
                int | None,
                Advertised(
                    f'Results per page (default {config.default_limit}, at most {config.max_results}).',
                    shown_as=Annotated[int, Field(ge=1, le=config.max_results)] | None,
                ),
            ] = None,
            offset: Annotated[
                int,
                Advertised(
                    'Position to start from: 0, or the `next_offset` of the previous page.',
                    shown_as=Annotated[int, Field(ge=0)],
                ),
            ] = 0,
        ) -> dict[str, Any]:
            """Find grouped tools by keywords and return their current schemas."""
            # Looked up per call: `controls.search.search_page` is the one ranking entry point (tests wrap it there).
            return await searched(ctx, runtime, query, group, limit, offset, _search.search_page)

        async def call(
            ctx: RunContext[Any],
            group: Annotated[str, Advertised('The group of the tool.', groups=True)],
            tool: Annotated[str, Advertised('The local tool name, as returned by search.')],
            arguments: Annotated[
                Any,
                Advertised(
                    "Arguments matching the tool's parameters_json_schema.", shown_as=dict[str, Any], required=True
                ),
            ] = None,
        ) -> Any:
            """Call one grouped tool by group, local tool name and an arguments object."""
            return await called(ctx, runtime, group, tool, arguments, run_call)

        super().__init__(
            [
                Tool(search, name=config.search_name, takes_ctx=True),
                # Sequential: a proxied call never runs concurrently with other calls of the same response.
                Tool(call, name=config.call_name, takes_ctx=True, sequential=True),
            ],
            id=None,
        )
        self.runtime = runtime
        self.search_schema, self.search_groups = _derived(config, search)
        """The search control's advertised schema without the group enum (`advertised_schema`, shared: read only),
        and the names of its group parameters."""
        self.call_schema, self.call_groups = _derived(config, call)
        """The call control's advertised schema without the group enum, and its group parameters."""

    @property
    def label(self) -> str:
        return f'ToolProxy controls ({self.runtime.config.search_name!r}, {self.runtime.config.call_name!r})'

    @property
    def codeact_policy(self) -> ControlsPolicy:
        """a13n-harness CodeAct policy of the controls: both are callable from code (docs/a13n-harness.md)."""
        return CONTROLS_POLICY

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # In an a13n-harness run, the call control is marked as a call envelope so CodeAct resolves it to the target.
        return interop_for(ctx).mark_controls(await super().get_tools(ctx), self.runtime.config.call_name)

    @property
    def tool_name_conflict_hint(self) -> str:
        return 'Choose other control names with ToolProxyConfig(search_name=..., call_name=...).'

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run a control; a `timeout` set on the call control's definition (e.g. by a host hook that sets one on every
        tool) is not enforced on it: the call lasts as long as its target, whose own timeout (the same hook sets it
        on members) ends it with an uncertain-outcome failure. The search control keeps a timeout set on it."""
        if name == self.runtime.config.call_name and tool.tool_def.timeout is not None:
            tool = replace(tool, tool_def=replace(tool.tool_def, timeout=None))
        return await super().call_tool(name, tool_args, ctx, tool)


def advertised_controls(
    controls: ControlToolset, search_def: ToolDefinition, call_def: ToolDefinition, groups: list[str]
) -> tuple[ToolDefinition, ToolDefinition]:
    """The two control definitions as the model should see them this step: the descriptions with the current
    group summaries, and the advertised schemas with the current groups as the group enum."""
    runtime = controls.runtime
    summary = group_summary(groups, runtime.descriptions)
    return (
        replace(
            search_def,
            description=search_description(runtime.config, summary),
            parameters_json_schema=with_groups(controls.search_schema, controls.search_groups, groups),
        ),
        replace(
            call_def,
            description=call_description(runtime.config, summary),
            parameters_json_schema=with_groups(controls.call_schema, controls.call_groups, groups),
        ),
    )
