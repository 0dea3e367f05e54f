"""The CLI's config file (TOML or JSON): the spec's illustrative Host schema plus how to build each source.

The host document (docs/cli.md) lists `tool_sources` by stable `source_id`, each presented
`direct` or `proxy` (with `group` and `description`), plus optional discovery settings. Resolving a source
ID is trusted host code; for the CLI that is the `[sources]` table, which says how to construct each ID:

```toml
[sources.customer-tools]
module = "hosttools.py:crm_toolset"          # module:attribute or path/to/file.py:attribute
[sources.notes]
mcp_stdio = "python mcp_server.py"            # or mcp_http = "https://mcp.example.com/mcp"
[sources.host-status]
module = "hosttools:status_toolset"
[sources.desktop]
mcp_config = "mcp.json"                       # an mcpServers file: one group per server (group ids: ToolProxyCapability.from_mcp_config)
descriptions = { github = "Issues and pull requests" }   # optional, by server name
lazy = true                                   # optional: serve servers from their cached listings, start on use

[[tool_sources]]
source_id = "customer-tools"
presentation = "proxy"
group = "crm"
description = "Customer records and account operations"

[[tool_sources]]
source_id = "host-status"
presentation = "direct"

[[tool_sources]]
source_id = "desktop"
presentation = "proxy"                        # no group: the file names them

[discovery]                                   # optional ToolProxyConfig fields
max_search_bytes = 32768
embedder = "openai:text-embedding-3-small"    # hybrid search (or "embedders.py:model", a module:attribute)
semantic_weight = 0.35
embedding_cache = "vectors.sqlite3"           # "off" (or false): memory only; omitted: the default file
```

Sources defined but not listed in `tool_sources` stay direct. A `module` source that yields a
`ToolProxyCapability` or a mapping of groups, and an `mcp_config` source, are listed with `presentation = "proxy"`
and no `group`.
Relative paths (module files, the stdio command's working directory, the embedder's module, the embedding cache)
are resolved against the file's directory; a path that starts with `~` (`mcp_config`, a module file, the embedder's
module or `local:` folder, the embedding cache) starts in the user's home folder.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from ._embedder import EmbedderSpec, cache_setting
from ._sources import SourceError, SourceSpec

__all__ = ('load_config',)


class _Model(BaseModel):
    model_config = ConfigDict(extra='forbid', frozen=True)


class SourceDefinition(_Model):
    """How to construct one source ID: exactly one of `module`, `mcp_stdio`, `mcp_http`, `mcp_config` (with
    `descriptions`, server name -> group description, for `mcp_config` only)."""

    module: StrictStr | None = None
    mcp_stdio: StrictStr | None = None
    mcp_http: StrictStr | None = None
    mcp_config: StrictStr | None = None
    descriptions: dict[StrictStr, StrictStr] | None = None
    lazy: StrictBool | None = None

    @model_validator(mode='after')
    def _exactly_one(self) -> SourceDefinition:
        given = [k for k in ('module', 'mcp_stdio', 'mcp_http', 'mcp_config') if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f'give exactly one of module, mcp_stdio, mcp_http, mcp_config (got {", ".join(given) or "none"})'
            )
        if self.descriptions is not None and self.mcp_config is None:
            raise ValueError('descriptions apply to an mcp_config source only')
        if self.lazy is not None and self.mcp_config is None:
            raise ValueError('lazy applies to an mcp_config source only')
        return self


class ToolSource(_Model):
    """One entry of the Host schema's `tool_sources` list."""

    source_id: StrictStr
    presentation: Literal['proxy', 'direct']
    group: StrictStr | None = None
    description: StrictStr | None = None

    @model_validator(mode='after')
    def _direct_has_no_group(self) -> ToolSource:
        if self.presentation == 'direct' and (self.group is not None or self.description is not None):
            raise ValueError('a direct source has no group or description')
        return self


class Discovery(_Model):
    """Optional `ToolProxyConfig` fields."""

    search_name: StrictStr | None = None
    call_name: StrictStr | None = None
    max_results: StrictInt | None = None
    max_search_bytes: StrictInt | None = None
    include_instructions: StrictBool | None = None
    embedder: StrictStr | None = None
    semantic_weight: StrictFloat | StrictInt | None = None
    embedding_cache: StrictStr | Literal[False] | None = None
    embedding_wait: StrictFloat | StrictInt | None = None
    query_timeout: StrictFloat | StrictInt | None = None
    embedding_timeout: StrictFloat | StrictInt | None = None


class HostConfig(_Model):
    """The whole file."""

    sources: dict[str, SourceDefinition]
    tool_sources: list[ToolSource] = []
    discovery: Discovery = Discovery()


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding='utf-8')
    except OSError as exc:
        raise SourceError(f'cannot read config file {str(path)!r}: {exc.strerror or exc}') from exc
    suffix = path.suffix.lower()
    try:
        if suffix == '.toml':
            return tomllib.loads(text)
        if suffix == '.json':
            return json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f'{path}: not valid {suffix[1:].upper()}: {exc}') from exc
    raise SourceError(f'{path}: a config file must end in .toml or .json')


def load_config(path: Path) -> tuple[list[SourceSpec], dict[str, Any]]:
    """Read a config file: the source specs (listed ones first, then unlisted ones, direct) and discovery overrides
    (`ToolProxyConfig` fields; `embedder` as an unresolved `EmbedderSpec`, `embedding_cache` as `cache_setting`).

    Raises:
        SourceError: unreadable file, invalid TOML/JSON, a schema violation (unknown key, wrong type, missing
            field; each named by its location), an unknown or repeated `source_id`.
    """
    raw = _read(path)
    try:
        config = HostConfig.model_validate(raw)
    except ValidationError as exc:
        problems = '; '.join(f'{".".join(str(p) for p in e["loc"]) or "(top level)"}: {e["msg"]}' for e in exc.errors())
        raise SourceError(f'{path}: {problems}') from None
    base = path.resolve().parent
    specs: list[SourceSpec] = []
    listed: set[str] = set()
    for i, entry in enumerate(config.tool_sources):
        where = f'{path}: tool_sources.{i}'
        if entry.source_id not in config.sources:
            known = ', '.join(config.sources) or '(none)'
            raise SourceError(f'{where}: unknown source_id {entry.source_id!r}; [sources] defines {known}')
        if entry.source_id in listed:
            raise SourceError(f'{where}: source_id {entry.source_id!r} is listed twice; present each source once')
        listed.add(entry.source_id)
        specs.append(_spec(entry.source_id, config.sources[entry.source_id], base, entry))
    for source_id, definition in config.sources.items():
        if source_id not in listed:
            specs.append(_spec(source_id, definition, base, None))
    discovery = config.discovery.model_dump(exclude_none=True)
    if 'embedder' in discovery:
        discovery['embedder'] = EmbedderSpec(discovery['embedder'], base, f'{path}: discovery.embedder')
    if 'embedding_cache' in discovery:
        discovery['embedding_cache'] = cache_setting(discovery['embedding_cache'], base)
    return specs, discovery


def _spec(source_id: str, definition: SourceDefinition, base: Path, entry: ToolSource | None) -> SourceSpec:
    if definition.module is not None:
        kind, target = 'module', definition.module
    elif definition.mcp_stdio is not None:
        kind, target = 'mcp-stdio', definition.mcp_stdio
    elif definition.mcp_config is not None:
        kind, target = 'mcp-config', definition.mcp_config
    else:
        kind, target = 'mcp-http', definition.mcp_http or ''
    return SourceSpec(
        kind=kind,  # type: ignore[arg-type]
        target=target,
        group=entry.group if entry else None,
        description=entry.description if entry else None,
        presentation=entry.presentation if entry else 'direct',
        base_dir=base,
        origin=f'sources.{source_id}',
        descriptions=dict(definition.descriptions) if definition.descriptions is not None else None,
        lazy=bool(definition.lazy),
    )
