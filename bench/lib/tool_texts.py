"""The tool texts the hybrid benchmarks embed: the recipes compared by ``bench/experiments/fusion_prototype.py``.

Every recipe starts from the tool's local name with ``_`` and ``-`` as spaces, ``': '`` and its description:

* ``name+description``: ``'get weather: Current weather of a city.'``;
* ``name+description+group`` (the default, the package's own recipe: ``hybrid.embedding_text.embedding_text``, which
  also folds whitespace runs): that, a space, the group name (``_``/``-`` as spaces) and, when the group has one,
  ``': '`` and the group description: ``'get weather: Current weather of a city. weather: Forecasts and
  observations.'``;
* ``name+description+group+parameters``: the default recipe, then ``' Parameters: '`` and the parameter names
  (``_``/``-`` as spaces) with their descriptions, ``'; '``-separated.

A missing description (empty) leaves just the name. Texts are not cut here: the embedder truncates (MiniLM at
256 word pieces).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.lib.corpus import Tool

RECIPES = ('name+description', 'name+description+group', 'name+description+group+parameters')
DEFAULT_RECIPE = 'name+description+group'


def _spaced(name: str) -> str:
    return name.replace('_', ' ').replace('-', ' ').strip()


def _parameters(schema: Mapping[str, Any]) -> str:
    parts = []
    for name, spec in (schema.get('properties') or {}).items():
        described = spec.get('description') if isinstance(spec, Mapping) else None
        parts.append(f'{_spaced(name)} ({described})' if described else _spaced(name))
    return '; '.join(parts)


def tool_text(tool: Tool, group_description: str, recipe: str = DEFAULT_RECIPE) -> str:
    """The text of `tool` under `recipe` (one of `RECIPES`; ``ValueError`` otherwise)."""
    if recipe not in RECIPES:
        raise ValueError(f'unknown recipe {recipe!r}; expected one of {RECIPES}')
    if recipe == DEFAULT_RECIPE:
        from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text

        return embedding_text(tool.group, tool.name, tool.description, group_description)
    text = _spaced(tool.name)
    description = tool.description.strip()
    if description:
        text += f': {description}'
    if recipe == 'name+description':
        return text
    text += f' {_spaced(tool.group)}'
    if group_description.strip():
        text += f': {group_description.strip()}'
    if recipe.endswith('+parameters'):
        parameters = _parameters(tool.parameters)
        if parameters:
            text += f' Parameters: {parameters}'
    return text


def tool_texts(tools: Sequence[Tool], descriptions: Mapping[str, str], recipe: str = DEFAULT_RECIPE) -> list[str]:
    """`tool_text` of every tool, in order."""
    return [tool_text(tool, descriptions.get(tool.group, ''), recipe) for tool in tools]
