"""The text a tool is embedded as for hybrid search, and its fingerprint (the cache key beside the embedder).

The recipe (measured in docs/search-quality.md): the tool name with `_` and `-` as spaces, `: `, the description,
then the group name (spaced the same way) and the group's description. Parameters are left out: with small
sentence models they made the ranking slightly worse. Whitespace runs fold to one space, so a description's
line breaks do not change the fingerprint of otherwise equal text.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ('embedding_text', 'text_hash')

_SPACED = re.compile(r'[_\-\s]+')
_WHITESPACE = re.compile(r'\s+')


def _spaced(name: str) -> str:
    return _SPACED.sub(' ', name).strip()


def embedding_text(group: str, tool: str, description: str, group_description: str) -> str:
    """The text tool `tool` of `group` is embedded as.

    ```python
    from pydantic_ai_toolproxy._embedding_text import embedding_text

    text = embedding_text('weather', 'get_forecast', 'Forecast for a city.', 'Weather data')
    assert text == 'get forecast: Forecast for a city. weather: Weather data'
    ```

    Empty parts are left out (no dangling `: `); the result is never empty for a valid tool name.
    """
    head = _spaced(tool)
    description = _WHITESPACE.sub(' ', description).strip()
    text = f'{head}: {description}' if description else head
    group_part = _spaced(group)
    group_description = _WHITESPACE.sub(' ', group_description).strip()
    if group_description:
        group_part = f'{group_part}: {group_description}' if group_part else group_description
    return f'{text} {group_part}' if group_part else text


def text_hash(text: str) -> bytes:
    """The 16-byte fingerprint of `text` (blake2b of its UTF-8, `surrogatepass` so any str hashes)."""
    return hashlib.blake2b(text.encode('utf-8', 'surrogatepass'), digest_size=16).digest()
