"""Canonical names of grouped tools: `{group}__{tool}`, the one place that builds and splits them.

Every member stays registered in the `ToolManager` under its canonical name. The
spelling alone is ambiguous when a group name ends in `_` or a tool name starts with one (group `ops` + tool
`_purge` and group `ops_` + tool `purge` both spell `ops___purge`), so a canonical name is split only with the
group that owns it (`local_name`), never by searching for the separator; the proxy refuses two members that
spell the same name at preparation (`controls.surface.ProxySurfaceToolset.merge`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from .. import _core

__all__ = ('SEPARATOR', 'canonical_name', 'group_id', 'group_ids', 'local_name')

SEPARATOR: str = _core.CANONICAL_SEPARATOR
"""`__`, from the Rust core (`names::CANONICAL_SEPARATOR`)."""


def canonical_name(group: str, tool: str) -> str:
    """`{group}__{tool}`.

    ```python
    from pydantic_ai_toolproxy.grouping.names import canonical_name, local_name

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

HASH_CHARS = 6
"""Hex digits of a name's SHA-256 appended to a group id that had to be shortened or told apart (`group_id`)."""


def _cleaned(server: str) -> str:
    """The server name with the character rule of `group_id` applied (possibly empty or too long)."""
    text = _UNDERSCORES.sub('_', _OUTSIDE.sub('_', server)).strip('_-')
    return 'mcp_' + text if text[:1].isdigit() else text


def _hashed(server: str, text: str, digits: int = HASH_CHARS) -> str:
    """`text` cut so that `_<digits hex of the name's SHA-256>` fits in `MAX_GROUP_CHARS` (`mcp` when nothing is
    left), with that suffix."""
    suffix = hashlib.sha256(server.encode('utf-8', 'surrogatepass')).hexdigest()[:digits]
    head = text[: MAX_GROUP_CHARS - 1 - digits].rstrip('_-') or 'mcp'
    return f'{head}_{suffix}'


def group_id(server: str) -> str:
    """The group id of the MCP server named `server` in an `mcpServers` file: always a valid group name, the same
    in every process.

    The rule, in order: every run of characters other than ASCII letters, digits, `-` and `_` becomes one `_`;
    runs of `_` become one `_` (a group id holds no `__`, the canonical-name separator); `_` and `-` are stripped
    from both ends; a name that then starts with a digit gets the prefix `mcp_`. Letter case is kept. A valid group
    name is returned unchanged. A result that is empty or longer than 32 characters is cut to its first 25
    characters (`mcp` when empty) followed by `_` and the first 6 hex digits of the SHA-256 of the name as written
    (UTF-8). Two servers of one file whose ids come out equal are told apart by `group_ids`.

    ```python
    from pydantic_ai_toolproxy.grouping.names import group_id

    assert group_id('github') == 'github'
    assert group_id('@acme/server-files') == 'acme_server-files'
    assert group_id('my server.v2') == 'my_server_v2'
    assert group_id('1password') == 'mcp_1password'
    assert group_id('awslabs.aws-documentation-mcp-server') == 'awslabs_aws-documentation_c94c58'
    assert group_id('!!!') == 'mcp_' + group_id('!!!')[-6:]
    ```
    """
    text = _cleaned(server)
    if not text or len(text) > MAX_GROUP_CHARS:
        text = _hashed(server, text)
    _core.validate_group_name(text)  # the rule above only yields valid names; the core's check stays the authority
    return text


def group_ids(servers: Iterable[str]) -> dict[str, str]:
    """Server name -> group id for the servers of one file (`servers`, distinct names), all distinct.

    Each is `group_id(server)`, except where several servers come out with one id: the server whose name is that
    id as written (if any) keeps it, and each other one gets the id cut as in `group_id` with `_` and 6 hex
    digits of its name's SHA-256 (more digits in the astronomically unlikely case that this is taken too). The
    result depends only on the set of names, never on their order.

    ```python
    from pydantic_ai_toolproxy.grouping.names import group_ids

    ids = group_ids(['my_server', 'my server', 'my.server'])
    assert ids['my_server'] == 'my_server' and len(set(ids.values())) == 3
    assert ids == group_ids(['my.server', 'my server', 'my_server'])
    ```
    """
    names = list(dict.fromkeys(servers))
    first = {server: group_id(server) for server in names}
    claims: dict[str, list[str]] = {}
    for server, gid in first.items():
        claims.setdefault(gid, []).append(server)
    result: dict[str, str] = {}
    taken = {gid for gid, owners in claims.items() if len(owners) == 1 or gid in owners}
    for server, gid in first.items():
        owners = claims[gid]
        if len(owners) == 1 or server == gid:
            result[server] = gid
            continue
        for digits in (HASH_CHARS, 10, 16, 27):
            candidate = _hashed(server, gid, digits)
            if candidate not in taken:
                break
        _core.validate_group_name(candidate)
        taken.add(candidate)
        result[server] = candidate
    return {server: result[server] for server in names}
