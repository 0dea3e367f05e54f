"""Canonical names of grouped tools: `{group}__{tool}`, the one place that builds and splits them.

Every member stays registered in the `ToolManager` under its canonical name. The
spelling alone is ambiguous when a group name ends in `_` or a tool name starts with one (group `ops` + tool
`_purge` and group `ops_` + tool `purge` both spell `ops___purge`), so a canonical name is split only with the
group that owns it (`local_name`), never by searching for the separator; the proxy refuses two members that
spell the same name at preparation (`_surface.ProxySurfaceToolset.merge`).
"""

from __future__ import annotations

import re

from . import _core

__all__ = ('SEPARATOR', 'canonical_name', 'group_id', 'local_name')

SEPARATOR: str = _core.CANONICAL_SEPARATOR
"""`__`, from the Rust core (`names::CANONICAL_SEPARATOR`)."""


def canonical_name(group: str, tool: str) -> str:
    """`{group}__{tool}`.

    ```python
    from pydantic_ai_toolproxy._names import canonical_name, local_name

    assert canonical_name('crm', 'customer_name') == 'crm__customer_name'
    assert local_name(canonical_name('ops_', 'purge'), 'ops_') == 'purge'
    assert local_name(canonical_name('ops', '_purge'), 'ops') == '_purge'
    ```
    """
    return f'{group}{SEPARATOR}{tool}'


def local_name(canonical: str, group: str) -> str:
    """The tool name inside `group` of the member registered as `canonical` (which must be `group`'s member)."""
    return canonical[len(group) + len(SEPARATOR) :]


_OUTSIDE = re.compile(r'[^A-Za-z0-9_-]+')
_UNDERSCORES = re.compile(r'_{2,}')
MAX_GROUP_CHARS = 32
"""The longest group id an MCP server name becomes (`group_id`)."""


def group_id(server: str) -> str:
    """The group id of the MCP server named `server` in an `mcpServers` file.

    The rule, in order: every run of characters other than ASCII letters, digits, `-` and `_` becomes one `_`;
    runs of `_` become one `_` (a group id holds no `__`, the canonical-name separator); `_` and `-` are stripped
    from both ends; a name that then starts with a digit gets the prefix `mcp_`. Letter case is kept. A valid group
    name is returned unchanged.

    ```python
    from pydantic_ai_toolproxy._names import group_id

    assert group_id('github') == 'github'
    assert group_id('@acme/server-files') == 'acme_server-files'
    assert group_id('my server.v2') == 'my_server_v2'
    assert group_id('1password') == 'mcp_1password'
    ```

    Raises:
        ValueError: naming the server, when nothing is left (a name of only punctuation or non-ASCII letters) or
            the result is longer than 32 characters; rename the server in the file.
    """
    text = _UNDERSCORES.sub('_', _OUTSIDE.sub('_', server)).strip('_-')
    if text[:1].isdigit():
        text = 'mcp_' + text
    if not text:
        raise ValueError(
            f'MCP server {server!r} cannot be a ToolProxy group: its name holds no ASCII letter or digit. '
            'Rename the server in the mcpServers file (group ids are ASCII letters, digits, - and _).'
        )
    if len(text) > MAX_GROUP_CHARS:
        raise ValueError(
            f'MCP server {server!r} cannot be a ToolProxy group: its group id {text!r} is {len(text)} characters, '
            f'more than {MAX_GROUP_CHARS}. Give the server a shorter name in the mcpServers file.'
        )
    _core.validate_group_name(text)  # the rule above only yields valid names; the core's check stays the authority
    return text
