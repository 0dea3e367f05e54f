"""Canonical names of grouped tools: `{group}__{tool}`, the one place that builds and splits them.

Every member stays registered in the `ToolManager` under its canonical name. The
spelling alone is ambiguous when a group name ends in `_` or a tool name starts with one (group `ops` + tool
`_purge` and group `ops_` + tool `purge` both spell `ops___purge`), so a canonical name is split only with the
group that owns it (`local_name`), never by searching for the separator; the proxy refuses two members that
spell the same name at preparation (`_surface.ProxySurfaceToolset.merge`).
"""

from __future__ import annotations

from . import _core

__all__ = ('SEPARATOR', 'canonical_name', 'local_name')

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
