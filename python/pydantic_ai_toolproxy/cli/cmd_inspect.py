"""`toolproxy inspect`: groups, tool counts, and the bytes the proxy adds to every model request versus offering every tool directly.

Three real agent runs, each recording its first model request (`_probe.probe`): the direct sources alone
(the baseline both presentations share), the direct sources plus the `ToolProxyCapability`, and the direct
sources plus every grouped source installed directly. The figures are the differences to the baseline, so
they are exactly what the proxy (or offering everything) adds to each request.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, PrefixedToolset

from ..mcp_servers.toolset import MCPServerToolset
from ._hybrid import cached_coverage, describe_cache, quiet_vectors
from ._probe import ProbeRun, definition_bytes, grouped_members, probe, text_bytes
from ._progress import Progress
from ._render import Column, Output, clip, num, plural
from ._sources import Surface

__all__ = ('run_inspect',)


def _added(run: ProbeRun, baseline: ProbeRun) -> tuple[list[ToolDefinition], int]:
    assert run.snapshot is not None and baseline.snapshot is not None
    base_names = set(baseline.snapshot.offered())
    tools = [t for t in run.snapshot.info.function_tools if t.name not in base_names]
    return tools, text_bytes(run.snapshot.info.instructions) - text_bytes(baseline.snapshot.info.instructions)


async def measure(surface: Surface, progress: Progress) -> dict[str, Any] | str:
    """The inspect document (see `run_inspect`), or the preparation error's message when the proxy cannot prepare."""
    capability = surface.capability()
    vectors = quiet_vectors(capability)  # inspect never calls the embedder
    direct_toolsets, direct_caps = surface.direct_toolsets(), surface.direct_capabilities()
    with progress.step('preparing the tools with the proxy') as step:
        proxied = await probe(toolsets=direct_toolsets, capabilities=[*direct_caps, capability])
        step.done('prepared with the proxy')
    if proxied.error is not None:
        return str(proxied.error)
    with progress.step('preparing the direct tools alone'):
        baseline = await probe(toolsets=direct_toolsets, capabilities=direct_caps)
    if baseline.error is not None:
        return str(baseline.error)
    group_sources = [g.source for g in surface.groups.values()]
    with progress.step('preparing every tool directly'):
        everything = await probe(
            toolsets=[*direct_toolsets, *(_as_plain(s) for s in group_sources if isinstance(s, AbstractToolset))],
            capabilities=[*direct_caps, *(s for s in group_sources if isinstance(s, AbstractCapability))],
        )
    assert proxied.snapshot is not None and baseline.snapshot is not None
    hybrid = None if vectors is None else await cached_coverage(capability, vectors, proxied.snapshot.tools)
    config = surface.config
    members = grouped_members(capability, proxied.snapshot)
    controls, proxy_instructions = _added(proxied, baseline)
    proxy_tool_bytes = sum(definition_bytes(t) for t in controls)
    proxy: dict[str, Any] = {
        'tools': len(controls),
        'controls': [{'name': t.name, 'bytes': definition_bytes(t)} for t in controls],
        'tool_bytes': proxy_tool_bytes,
        'instructions_bytes': proxy_instructions,
        'total_bytes': proxy_tool_bytes + proxy_instructions,
    }
    direct: dict[str, Any]
    if everything.error is not None:
        direct = {'error': str(everything.error)}
    else:
        tools, instructions = _added(everything, baseline)
        tool_bytes = sum(definition_bytes(t) for t in tools)
        direct = {
            'tools': len(tools),
            'tool_bytes': tool_bytes,
            'instructions_bytes': instructions,
            'total_bytes': tool_bytes + instructions,
        }
    return {
        'config': {
            'search_name': config.search_name,
            'call_name': config.call_name,
            'max_results': config.max_results,
            'max_search_bytes': config.max_search_bytes,
            'include_instructions': config.include_instructions,
        },
        'groups': [
            {
                'name': name,
                'description': capability.groups[name].description,  # as the model reads it (a server's own)
                'tools': len(members[name]),
                'sources': surface.group_origins[name],
                'server': _server_name(group.source),
            }
            for name, group in surface.groups.items()
        ],
        'grouped_tools': sum(len(m) for m in members.values()),
        'hybrid': hybrid,
        'direct_tools': baseline.snapshot.offered(),
        'per_request': {'proxy': proxy, 'direct': direct},
        'controls': [
            {'name': t.name, 'description': t.description, 'parameters_json_schema': t.parameters_json_schema}
            for t in controls
        ],
        'instructions': proxied.snapshot.info.instructions or '',
    }


def _as_plain(source: AbstractToolset[Any]) -> AbstractToolset[Any]:
    """A grouped toolset as plain Pydantic AI offers it: a server of an `mcpServers` file with its tools prefixed by
    the server's name (`<server>_<tool>`, as `load_mcp_toolsets` does, so servers sharing a tool name do not
    clash), any other source as it is."""
    return PrefixedToolset(source, prefix=source.server) if isinstance(source, MCPServerToolset) else source


def _server_name(source: object) -> str | None:
    """The name in its `mcpServers` file of the server a group was made from (None for other sources)."""
    return source.server if isinstance(source, MCPServerToolset) else None


async def run_inspect(surface: Surface, out: Output, progress: Progress, *, full: bool = False) -> int:
    """Print the groups and the per-request bytes; exit status 0, or 1 when the proxy cannot prepare.

    JSON document: `config`; `groups` (`name`, `description`, `tools`, `sources`, `server`: the name in its
    `mcpServers` file of the server the group was made from, else null); `grouped_tools`; `hybrid` (null
    without an embedder; else `embedder`, `store_key`, `semantic_weight`, `cache` and `with_vectors` of `tools`:
    the tool texts that already have a vector in the embedding cache, looked up without calling the embedder);
    `direct_tools` (names offered either way); `per_request.proxy` (`controls` with their `bytes`,
    `tool_bytes`, `instructions_bytes`, `total_bytes`) and `per_request.direct` (`tools`, `tool_bytes`,
    `instructions_bytes`, `total_bytes`, or `error` when the tools cannot all be offered directly; the servers of
    an `mcpServers` file are offered as `load_mcp_toolsets` offers them, each tool prefixed `<server>_`);
    `controls` (the control definitions as the model gets them) and `instructions` (the whole
    instructions text of a request with the proxy). Bytes are UTF-8: tool definitions as
    `{"name", "description", "parameters"}` compact JSON, instructions as text, both added to what the
    direct tools alone send.
    """
    doc = await measure(surface, progress)
    if isinstance(doc, str):
        out.error(
            f'the proxy cannot prepare these sources: {doc}\nRun `toolproxy check` to list every problem with its fix.'
        )
        return 1
    if out.as_json:
        out.json(doc)
        return 0
    _print(doc, out, full)
    return 0


def _print(doc: dict[str, Any], out: Output, full: bool) -> None:
    config, groups, per = doc['config'], doc['groups'], doc['per_request']
    direct_names = doc['direct_tools']
    direct_text = plural(len(direct_names), 'direct tool')
    if direct_names:
        direct_text += f' ({clip(", ".join(direct_names), 60)})'
    out.line(f'{plural(len(groups), "group")}, {plural(doc["grouped_tools"], "grouped tool")}, {direct_text}')
    out.line(
        f'controls {config["search_name"]} / {config["call_name"]}; max_results {config["max_results"]}, '
        f'max_search_bytes {num(config["max_search_bytes"])}'
    )
    hybrid = doc['hybrid']
    if hybrid is not None:
        missing = hybrid['tools'] - hybrid['with_vectors']
        out.line(
            f'hybrid search with {hybrid["embedder"]}, semantic_weight {hybrid["semantic_weight"]:g}: '
            f'{num(hybrid["with_vectors"])} of {plural(hybrid["tools"], "tool")} have a vector'
            + (f' (`toolproxy embed` embeds the other {num(missing)})' if missing else '')
        )
        out.line(f'embedding cache {describe_cache(hybrid["cache"])}')
    out.line()
    if any(g['server'] is not None and g['server'] != g['name'] for g in groups):  # which server became which group
        out.table(
            [Column('group'), Column('MCP server'), Column('tools', 'right'), Column('description', max_width=60)],
            [[g['name'], g['server'] or '', num(g['tools']), g['description']] for g in groups],
        )
    else:
        out.table(
            [Column('group'), Column('tools', 'right'), Column('description', max_width=72)],
            [[g['name'], num(g['tools']), g['description']] for g in groups],
        )
    out.line()
    proxy, direct = per['proxy'], per['direct']
    if 'error' in direct:
        rows = [
            ['tools offered', num(proxy['tools']), '-'],
            ['tool definitions', num(proxy['tool_bytes']), '-'],
            *[[f'  {c["name"]}', num(c['bytes']), ''] for c in proxy['controls']],
            ['instructions', num(proxy['instructions_bytes']), '-'],
            ['total', num(proxy['total_bytes']), '-'],
        ]
    else:
        rows = [
            ['tools offered', num(proxy['tools']), num(direct['tools'])],
            ['tool definitions', num(proxy['tool_bytes']), num(direct['tool_bytes'])],
            *[[f'  {c["name"]}', num(c['bytes']), ''] for c in proxy['controls']],
            ['instructions', num(proxy['instructions_bytes']), num(direct['instructions_bytes'])],
            ['total', num(proxy['total_bytes']), num(direct['total_bytes'])],
        ]
    out.table(
        [
            Column('bytes added to every model request'),
            Column('with the proxy', 'right'),
            Column('every tool directly', 'right'),
        ],
        rows,
    )
    out.line()
    if 'error' in direct:
        out.line(
            'Every tool directly (without the proxy): Pydantic AI would refuse these tools as one flat list '
            f'({direct["error"]}). Nothing is wrong on the proxy side: each group keeps its own tool names.'
        )
    elif direct['total_bytes']:
        share = 100 * proxy['total_bytes'] / direct['total_bytes']
        saved = direct['total_bytes'] - proxy['total_bytes']
        verb = 'fewer' if saved >= 0 else 'more'
        out.line(f'With the proxy each request carries {share:.2f}% of those bytes ({num(abs(saved))} bytes {verb}).')
    out.line(
        'Bytes: UTF-8 of each tool definition as compact JSON {name, description, parameters}, and of the instructions text.'
    )
    if full:
        for control in doc['controls']:
            out.line()
            out.line(f'--- {control["name"]}', style='bold')
            out.raw(json.dumps(control, indent=2, ensure_ascii=False))
        out.line()
        out.line('--- instructions (with the proxy)', style='bold')
        out.raw(doc['instructions'])
