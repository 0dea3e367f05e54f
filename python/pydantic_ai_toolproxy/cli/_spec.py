"""A source as named on the command line or in a config file (`SourceSpec`), and `SourceError`: what argument
parsing needs, without Pydantic AI (so `toolproxy --help` and `--version` answer without loading it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ('Presentation', 'SourceError', 'SourceKind', 'SourceSpec')

SourceKind = Literal['module', 'mcp-stdio', 'mcp-http', 'mcp-config']
Presentation = Literal['proxy', 'direct']


class SourceError(Exception):
    """A source could not be loaded, started or grouped; the message names it and says why (CLI exit status 2)."""


@dataclass
class SourceSpec:
    """One source named on the command line or in a config file, before it is loaded.

    Attributes:
        kind: `module` (`target` is `module:attribute` or `path/to/file.py:attribute`), `mcp-stdio`
            (`target` is a shell-quoted command line), `mcp-http` (`target` is the server URL) or `mcp-config`
            (`target` is an `mcpServers` JSON file: one group per server, `ToolProxyCapability.from_mcp_config`).
        target: See `kind`.
        group: Group name for a toolset or capability source; `None` leaves it direct unless
            `presentation` says `proxy`.
        description: Group description (the model reads it); a generated one is used when omitted.
        presentation: `proxy` or `direct`; `None` means proxy when `group` is set or the target is a
            `ToolProxyCapability` or a mapping of groups, direct otherwise.
        base_dir: Directory that relative file paths and stdio commands are resolved against.
        origin: How messages name this source, e.g. `--mcp-stdio 'python server.py'` or `sources.notes`.
        descriptions: For `mcp-config`: server name -> group description (the config file's `descriptions`).
        server_log: For stdio MCP servers: the folder their stderr goes to (`--server-log`), None for a private
            temporary one (the stderr stays off the command's output).
        lazy: For `mcp-config`: serve servers from fresh cached listings without starting them (`--lazy`, or
            `lazy = true` in the config file).
        listing_cache: For `mcp-config`: the listing cache (`--listing-cache`): `default`, a path, or `off`.
        start_timeout: For `mcp-config`: seconds each stdio server may take to start (`--start-timeout`); None: 30.
    """

    kind: SourceKind
    target: str
    group: str | None = None
    description: str | None = None
    presentation: Presentation | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    origin: str = ''
    descriptions: dict[str, str] | None = None
    server_log: Path | None = None
    lazy: bool = False
    listing_cache: str = 'default'
    start_timeout: float | None = None

    @property
    def label(self) -> str:
        """The name used in messages."""
        return self.origin or f'{self.kind} {self.target}'
