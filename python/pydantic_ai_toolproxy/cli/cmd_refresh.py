"""`toolproxy --mcp-config FILE refresh`: start every MCP server of the files and store what each lists.

The listing cache (`--listing-cache`, default `mcp-listings.sqlite3` beside the embedding cache) then serves
`--lazy` commands and lazy runs (`ToolProxyCapability.from_mcp_config(..., lazy=True)`) without starting a server,
until an entry is older than the server's `ttlMs` hint (when above zero) or one day.
"""

from __future__ import annotations

from ._render import Output
from ._sources import Surface

__all__ = ('run_refresh',)


def run_refresh(surface: Surface, out: Output) -> int:
    """Print one line per server (how many tools it listed and whether they were stored, or that it did not start)
    and one warning per server that did not start; exit status 0, or 1 when a server did not start (its entry is
    left as it was) or nothing could be stored (`--listing-cache off`, a failing cache).

    JSON document: `servers` (the lines), `failed` (the warnings), `stored` (how many listings were stored).
    """
    failed = [message for _, message in surface.unavailable]
    if out.as_json:
        out.json({'servers': surface.server_notes, 'failed': failed, 'stored': surface.stored})
    else:
        for line in surface.server_notes:
            out.line(line)
        for message in failed:
            out.warning(message)
        if not surface.stored:
            out.warning('no listing was stored: nothing for --lazy commands and lazy runs to serve')
    return 1 if failed or not surface.stored else 0
