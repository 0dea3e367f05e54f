"""A server's stdout noise stays the server's: a banner or any other non-JSON line a stdio server of an `mcpServers`
file writes on stdout.

The MCP SDK's stdio client logs each such line with its traceback (`logger.exception("Failed to parse JSONRPC
message from server")` on the `mcp.client.stdio` logger, in the task that reads the server's stdout), so without a
logging setup of the host's Python prints about ten lines per banner line on the host's stderr, on every run.

`quiet_stdout(toolset, server, log_path)` marks the server's connection: its transport's `connect` runs with a
context variable naming the server, which the stdout reader task inherits. A filter on the `mcp.client.stdio`
logger (installed once) takes the records of marked servers only: the offending line is appended to the server's
log file (`log_path`, where its stderr goes), and one warning per server and process says so on the
`pydantic_ai_toolproxy` logger. Records of other MCP clients of the process (a server the host built itself)
pass as they are.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
from pathlib import Path
from typing import Any

__all__ = ('quiet_stdout',)

logger = logging.getLogger('pydantic_ai_toolproxy')

_MESSAGE = 'Failed to parse JSONRPC message'
_LINE_BYTES = 2_000
"""Most bytes of one non-JSON line written to the server's log file (UTF-8)."""

_speaking: contextvars.ContextVar[tuple[str, Path | None] | None] = contextvars.ContextVar(
    'toolproxy_mcp_server', default=None
)
_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()
_installed = False


def _line_of(record: logging.LogRecord) -> str:
    """The stdout line the SDK could not parse (pydantic's `ValidationError` input), or '' when not found."""
    exc = record.exc_info[1] if record.exc_info else None
    try:
        errors = exc.errors() if exc is not None and hasattr(exc, 'errors') else []
        found = errors[0].get('input') if errors else None
    except Exception:  # another exception shape: no line
        return ''
    return found if isinstance(found, str) else ''


class _StdoutNoise(logging.Filter):
    """Takes the SDK's "Failed to parse JSONRPC message" records of marked servers (see the module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        who = _speaking.get()
        if who is None or not str(record.msg).startswith(_MESSAGE):
            return True
        server, path = who
        line = _line_of(record)
        if path is not None:
            shown = line.encode('utf-8', 'replace')[:_LINE_BYTES].decode('utf-8', 'ignore')
            try:
                with path.open('a', encoding='utf-8', errors='replace') as log:
                    log.write(f'[toolproxy] a line on stdout that is not MCP (ignored): {shown}\n')
            except OSError:
                pass
        with _lock:
            first = (server, str(path)) not in _warned
            _warned.add((server, str(path)))
        if first:
            where = f'; it and any later one go to {path}' if path is not None else ''
            logger.warning(
                'MCP server %r wrote a line on stdout that is not MCP, ignored (%r)%s',
                server,
                line[:120],
                where,
            )
        return False


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            logging.getLogger('mcp.client.stdio').addFilter(_StdoutNoise())
            _installed = True


def quiet_stdout(toolset: Any, server: str, log_path: Path | None) -> bool:
    """Mark the stdio connection of `toolset` (an `MCPToolset` over a FastMCP transport) as the MCP server named
    `server`, whose non-JSON stdout lines go to `log_path` (see the module docstring). Returns whether it was
    marked (False: a toolset without such a transport, left as it is)."""
    transport = getattr(getattr(toolset, 'client', None), 'transport', None)
    connect = getattr(transport, 'connect', None)
    if transport is None or connect is None or getattr(connect, '_toolproxy_server', None) is not None:
        return False
    _install()

    @functools.wraps(connect)
    async def marked(*args: Any, **kwargs: Any) -> Any:
        token = _speaking.set((server, log_path))
        try:
            return await connect(*args, **kwargs)
        finally:
            _speaking.reset(token)

    marked._toolproxy_server = server  # type: ignore[attr-defined]
    transport.connect = marked
    return True
