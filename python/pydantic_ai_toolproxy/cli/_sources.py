"""Sources the CLI inspects: `module:attribute` targets and MCP servers, resolved into one proxy surface.

As a host builds it (docs/cli.md): each source is presented directly or grouped; several sources of one group are
combined natively (`CombinedToolset`, or `CombinedCapability` when a capability is among them); the groups
become one `ToolProxyCapability(groups=...)`, exactly as a host would build it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pydantic_ai.capabilities import AbstractCapability, CombinedCapability, Toolset
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset

from ..capability import ToolProxyCapability
from ..config import ToolProxyConfig
from ..group import ToolProxyGroup
from ._spec import SourceError, SourceSpec

__all__ = ('SourceError', 'SourceSpec', 'Surface', 'build_surface')

Source = AbstractToolset[Any] | AbstractCapability[Any]


@dataclass
class Surface:
    """Everything one agent would be given: the grouped sources, the direct sources and the proxy config.

    Attributes:
        groups: Group name -> `ToolProxyGroup`, in the order the sources named them.
        group_origins: Group name -> the sources it was built from (for messages).
        direct: `(origin, source)` for every source offered directly.
        config: The `ToolProxyConfig` of the proxy.
        unavailable: `(group or None, message)` for each server of an `mcpServers` file that did not start; its
            group (or direct source) is left out, as a run would leave it out (`cli._session.open_surface`).
    """

    groups: dict[str, ToolProxyGroup[Any]]
    group_origins: dict[str, list[str]]
    direct: list[tuple[str, Source]]
    config: ToolProxyConfig
    unavailable: list[tuple[str | None, str]] = field(default_factory=list)
    server_notes: list[str] = field(default_factory=list)
    """One line per `mcpServers` server: how many tools, from where (with `refresh`: whether it was stored), or
    that it did not start."""
    listing_notes: list[str] = field(default_factory=list)
    """With `--lazy`: one line per server started because its cached listing was missing or stale."""
    stored: int = 0
    """With `refresh`: how many servers' listings the listing cache holds now."""

    def capability(self, groups: Iterable[str] | None = None) -> ToolProxyCapability[Any]:
        """A fresh `ToolProxyCapability` over all groups (or only `groups`), with the surface's config."""
        names = list(self.groups) if groups is None else list(groups)
        return ToolProxyCapability(groups={name: self.groups[name] for name in names}, config=self.config)

    def direct_toolsets(self) -> list[AbstractToolset[Any]]:
        """The direct sources that are toolsets (for `Agent(toolsets=...)`)."""
        return [s for _, s in self.direct if isinstance(s, AbstractToolset)]

    def direct_capabilities(self) -> list[AbstractCapability[Any]]:
        """The direct sources that are capabilities (for `Agent(capabilities=...)`)."""
        return [s for _, s in self.direct if isinstance(s, AbstractCapability)]

    def all_sources(self) -> list[tuple[str, Source]]:
        """`(origin, source)` of every grouped and direct source."""
        grouped = [(', '.join(self.group_origins[name]), g.source) for name, g in self.groups.items()]
        return grouped + list(self.direct)


# --- loading -------------------------------------------------------------------------------------


def _import_module(module: str, base_dir: Path, label: str) -> Any:
    if module.endswith('.py') or '/' in module or '\\' in module:
        path = (base_dir / os.path.expanduser(module)).resolve()  # `~/x.py`: the home folder, not base_dir's `~`
        if not path.is_file():
            raise SourceError(f'{label}: no such file {str(path)!r}')
        if str(path.parent) not in sys.path:
            # Example modules import their siblings (`from bfcl_tools import ...`), as when run as scripts.
            sys.path.insert(0, str(path.parent))
        name = path.stem
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, '__file__', '') or '').resolve() == path:
            return loaded
        if loaded is not None or not name.isidentifier():
            name = f'_toolproxy_source_{abs(hash(str(path)))}'
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise SourceError(f'{label}: cannot import {str(path)!r} as a Python module')
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as exc:
            del sys.modules[name]
            raise SourceError(f'{label}: importing {str(path)!r} failed: {type(exc).__name__}: {exc}') from exc
        return mod
    if str(base_dir) not in sys.path:
        sys.path.insert(0, str(base_dir))  # like `python -m`: modules next to where you stand are importable
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SourceError(f'{label}: cannot import module {module!r}: {exc}') from exc
    except Exception as exc:
        raise SourceError(f'{label}: importing module {module!r} failed: {type(exc).__name__}: {exc}') from exc


async def load_target(target: str, base_dir: Path, label: str) -> Any:
    """The object named by `module:attribute` (a dotted attribute path; a zero-argument factory is called).

    Raises:
        SourceError: malformed target, import failure, missing attribute or a failing factory.
    """
    module, sep, attr = target.rpartition(':')
    if not sep or not module or not attr:
        raise SourceError(f'{label}: expected module:attribute or path/to/file.py:attribute, got {target!r}')
    obj = _import_module(module, base_dir, label)
    for part in attr.split('.'):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SourceError(f'{label}: {module!r} has no attribute {attr!r}') from None
    if callable(obj) and not isinstance(obj, (AbstractToolset, AbstractCapability, Mapping)):
        try:
            obj = obj()
            if inspect.isawaitable(obj):
                obj = await obj
        except Exception as exc:
            raise SourceError(f'{label}: calling {attr}() failed: {type(exc).__name__}: {exc}') from exc
    return obj


def mcp_source(spec: SourceSpec) -> AbstractToolset[Any]:
    """An `MCPToolset` for an `mcp-stdio` or `mcp-http` spec (server instructions included, as a host would).

    Raises:
        SourceError: an empty command line or a missing MCP client (the `[mcp]` extra).
    """
    try:
        from pydantic_ai.mcp import MCPToolset
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise SourceError(
            f'{spec.label}: MCP support is not installed ({exc}); install the [mcp] extra: '
            'pip install "pydantic-ai-toolproxy[mcp]" (it is pydantic-ai-slim[mcp])'
        ) from exc
    if spec.kind == 'mcp-http':
        return MCPToolset(spec.target, id=spec.group, include_instructions=True)
    from fastmcp.client.transports import StdioTransport

    try:
        argv = shlex.split(spec.target)
    except ValueError as exc:
        raise SourceError(f'{spec.label}: cannot parse the command line: {exc}') from exc
    if not argv:
        raise SourceError(f'{spec.label}: the command line is empty')
    from ..mcp_servers.process import server_log_path

    # keep_alive off: the server stops with the command; its stderr goes to a file (quoted when it fails to start)
    log = server_log_path(spec.group or argv[0], spec.server_log)
    log.parent.mkdir(parents=True, exist_ok=True)
    transport = StdioTransport(command=argv[0], args=argv[1:], cwd=str(spec.base_dir), keep_alive=False, log_file=log)
    return MCPToolset(transport, id=spec.group, include_instructions=True)


def mcp_config_source(spec: SourceSpec) -> dict[str, ToolProxyGroup[Any]]:
    """The groups of an `mcp-config` spec: one per server of the file (`mcp_servers.config.mcp_groups`).

    Raises:
        SourceError: what `ToolProxyCapability.from_mcp_config` raises (file, format, `${VAR}`, server names,
            descriptions), or a missing MCP client.
    """
    try:
        from ..mcp_servers.config import mcp_groups

        return mcp_groups(
            spec.base_dir / os.path.expanduser(spec.target),  # `~/mcp.json` is in the home folder
            spec.descriptions,
            spec.server_log,
            lazy=spec.lazy,
            listing_cache=spec.listing_cache,
            **({'start_timeout': spec.start_timeout} if spec.start_timeout is not None else {}),
        )
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise SourceError(f'{spec.label}: MCP support is not installed ({exc}); install the [mcp] extra') from exc
    except (OSError, ValueError, TypeError) as exc:
        raise SourceError(f'{spec.label}: {exc}') from exc


@dataclass
class _Part:
    """One resolved source: grouped under `group`, or direct when `group` is None."""

    source: Source
    group: str | None
    description: str | None
    origin: str


def _group_entries(value: Any, label: str) -> list[tuple[str, Source, str | None]]:
    out: list[tuple[str, Source, str | None]] = []
    for name, item in value.items():
        if isinstance(item, ToolProxyGroup):
            out.append((name, item.source, item.description))
        elif isinstance(item, (AbstractToolset, AbstractCapability)):
            out.append((name, item, None))
        elif (
            isinstance(item, (tuple, list))
            and len(item) == 2
            and isinstance(item[0], (AbstractToolset, AbstractCapability))
            and isinstance(item[1], str)
        ):
            out.append((name, item[0], item[1]))
        else:
            raise SourceError(
                f'{label}: group {name!r} maps to a {type(item).__name__}; expected a ToolProxyGroup, a toolset, '
                'a capability, or a (source, description) pair'
            )
    return out


def _resolve(spec: SourceSpec, value: Any, configs: list[ToolProxyConfig]) -> list[_Part]:
    label = spec.label
    if isinstance(value, (ToolProxyCapability, Mapping)):
        if spec.group is not None or spec.description is not None:
            raise SourceError(
                f'{label} already names its groups; --group/--description apply to a single toolset or capability'
            )
        if isinstance(value, ToolProxyCapability):
            if spec.presentation == 'direct':
                raise SourceError(f'{label} is a ToolProxyCapability; it cannot be presented directly')
            configs.append(value.config)
            entries: list[tuple[str, Source, str | None]] = [
                (n, g.source, g.description) for n, g in value.groups.items()
            ]
        else:
            entries = _group_entries(value, label)
        if spec.presentation == 'direct':
            return [_Part(source, None, None, f'{label} [{name}]') for name, source, _ in entries]
        return [_Part(source, name, desc, f'{label} [{name}]') for name, source, desc in entries]
    if isinstance(value, (AbstractToolset, AbstractCapability)):
        if spec.presentation == 'direct':
            return [_Part(value, None, None, label)]
        if spec.group is None:
            if spec.presentation == 'proxy':
                raise SourceError(f'{label}: presentation proxy needs a group name')
            if spec.description is not None:
                raise SourceError(f'{label}: --description needs --group (a direct source has no group description)')
            return [_Part(value, None, None, label)]
        return [_Part(value, spec.group, spec.description, label)]
    raise SourceError(
        f'{label} is a {type(value).__name__}; expected a ToolProxyCapability, a toolset, a capability, '
        'or a mapping of group name to toolset (or a zero-argument function returning one)'
    )


def _combine(group: str, sources: list[Source]) -> Source:
    if len(sources) == 1:
        return sources[0]
    if all(isinstance(s, AbstractToolset) for s in sources):
        return CombinedToolset(sources)  # type: ignore[arg-type]
    return CombinedCapability([s if isinstance(s, AbstractCapability) else Toolset(s) for s in sources])


def _config(configs: list[ToolProxyConfig], overrides: Mapping[str, Any]) -> ToolProxyConfig:
    distinct = list(dict.fromkeys(configs))
    if len(distinct) > 1:
        raise SourceError(f'the sources carry different ToolProxyConfig values: {", ".join(map(repr, distinct))}')
    base = distinct[0] if distinct else ToolProxyConfig()
    values = {f.name: getattr(base, f.name) for f in fields(ToolProxyConfig)}
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ToolProxyConfig(**values)
    except (TypeError, ValueError) as exc:
        raise SourceError(str(exc)) from exc


async def build_surface(specs: list[SourceSpec], overrides: Mapping[str, Any] | None = None) -> Surface:
    """Load every source and group them into a `Surface`.

    `overrides` holds `ToolProxyConfig` field values (None = keep) that win over the config of a loaded
    `ToolProxyCapability`. Several sources naming one group are combined natively; their descriptions must
    agree (one may be omitted). A group without any description gets `Tools from <sources>`.

    Raises:
        SourceError: a source that cannot be loaded or grouped, conflicting descriptions or configs, or an
            invalid group name, description or config value (the message of the package's own validation).
    """
    configs: list[ToolProxyConfig] = []
    parts: list[_Part] = []
    for spec in specs:
        if spec.kind == 'module':
            value = await load_target(spec.target, spec.base_dir, spec.label)
        elif spec.kind == 'mcp-config':
            value = mcp_config_source(spec)
        else:
            value = mcp_source(spec)
        parts.extend(_resolve(spec, value, configs))
    config = _config(configs, overrides or {})
    members: dict[str, list[_Part]] = {}
    direct: list[tuple[str, Source]] = []
    for part in parts:
        if part.group is None:
            direct.append((part.origin, part.source))
        else:
            members.setdefault(part.group, []).append(part)
    groups: dict[str, ToolProxyGroup[Any]] = {}
    origins: dict[str, list[str]] = {}
    for name, group_parts in members.items():
        descriptions = list(dict.fromkeys(p.description for p in group_parts if p.description is not None))
        origins[name] = [p.origin for p in group_parts]
        if len(descriptions) > 1:
            raise SourceError(
                f'group {name!r} gets different descriptions from {", ".join(origins[name])}: '
                + '; '.join(repr(d) for d in descriptions)
            )
        description = descriptions[0] if descriptions else f'Tools from {", ".join(origins[name])}'
        try:
            groups[name] = ToolProxyGroup(
                source=_combine(name, [p.source for p in group_parts]), description=description
            )
        except TypeError as exc:
            raise SourceError(f'group {name!r}: {exc}') from exc
    surface = Surface(groups=groups, group_origins=origins, direct=direct, config=config)
    try:
        surface.capability()  # the package's own validation of group names, descriptions and sources
    except (TypeError, ValueError) as exc:
        raise SourceError(str(exc)) from exc
    return surface
