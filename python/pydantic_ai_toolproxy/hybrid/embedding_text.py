"""The text a tool is embedded as for hybrid search, and its fingerprint (the cache key beside the embedder).

The recipe (measured in docs/search-quality.md): the tool name with `_` and `-` as spaces, `: `, the description,
then the group name (spaced the same way) and the group's description. Parameters are left out: with small
sentence models they made the ranking slightly worse. Whitespace runs fold to one space, so a description's
line breaks do not change the fingerprint of otherwise equal text.
"""

from __future__ import annotations

import hashlib

__all__ = ('embedding_text', 'group_text', 'text_hash', 'tool_text')


def _spaced(name: str) -> str:
    return ' '.join(name.replace('_', ' ').replace('-', ' ').split())


def tool_text(tool: str, description: str) -> str:
    """The tool's part of `embedding_text`: `'{tool spaced}: {description}'` (just the name when no description)."""
    head = _spaced(tool)
    description = ' '.join(description.split())
    return f'{head}: {description}' if description else head


def group_text(group: str, group_description: str) -> str:
    """The group's part of `embedding_text`: `'{group spaced}: {group description}'` (parts left out when empty)."""
    spaced = _spaced(group)
    group_description = ' '.join(group_description.split())
    if group_description:
        return f'{spaced}: {group_description}' if spaced else group_description
    return spaced


def embedding_text(group: str, tool: str, description: str, group_description: str) -> str:
    """The text tool `tool` of `group` is embedded as: `tool_text` + ' ' + `group_text`.

    ```python
    from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text

    text = embedding_text('weather', 'get_forecast', 'Forecast for a city.', 'Weather data')
    assert text == 'get forecast: Forecast for a city. weather: Weather data'
    ```

    Empty parts are left out (no dangling `: `); the result is never empty for a valid tool name.
    """
    head, tail = tool_text(tool, description), group_text(group, group_description)
    return f'{head} {tail}' if tail else head


def text_hash(text: str) -> bytes:
    """The 16-byte fingerprint of `text` (blake2b of its UTF-8, `surrogatepass` so any str hashes)."""
    return hashlib.blake2b(text.encode('utf-8', 'surrogatepass'), digest_size=16).digest()
