"""Command-line arguments: sources and proxy settings before the command, the command's own options after it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._spec import SourceSpec

__all__ = ('build_parser', 'config_overrides')

DESCRIPTION = """\
See what a model will see before it sees it: group tool sources behind the ToolProxy controls, then
inspect the groups and the bytes per request, search as the model would, or check for everything that
would fail at runtime (exit status 1, for CI)."""

EPILOG = """\
sources (before the command; --group/--description apply to the source just before them):
  -s examples/demo_sources.py:bfcl_groups          a mapping of group name -> toolset
  -s mypkg.tools:crm --group crm --description "Customer records"
  -s mypkg.tools:status                            no --group: offered directly
  --mcp-stdio "python examples/mcp_server.py" --group notes
  --mcp-http https://mcp.example.com/mcp --group docs
  --mcp-config mcp.json                            an mcpServers file: one group per server
  --config toolproxy.toml                          the Host schema: tool_sources, presentation, group
  --server-log logs/                               keep the MCP servers' stderr (one file per server)
  --mcp-config mcp.json --lazy                     start no server that has a fresh cached listing

hybrid search (an embedder beside the keyword ranking; vectors cached in a file):
  --embedder openai:text-embedding-3-small         a model name Pydantic AI resolves
  --embedder mypkg.embedders:model                 an EmbeddingModel or Embedder (module:attr, or file.py:attr)
  --embedding-cache vectors.sqlite3                the cache file (default $TOOLPROXY_EMBEDDING_CACHE, else
                                                   the platform's cache folder ($XDG_CACHE_HOME, ~/.cache,
                                                   ~/Library/Caches or %LOCALAPPDATA%), then
                                                   pydantic-ai-toolproxy/embeddings.sqlite3; off: none)

examples:
  toolproxy --config examples/toolproxy.toml inspect
  toolproxy --config examples/toolproxy.toml search "convert temperature" --group notes
  toolproxy -s examples/bfcl_tools.py:bfcl_toolsets check --json
  toolproxy --embedder openai:text-embedding-3-small embed --config examples/toolproxy.toml

exit status: 0 ok; 1 a problem that would fail at runtime (check), a refused search, or sources the
proxy cannot prepare; 2 bad arguments or sources that cannot be loaded."""


class _AddSource(argparse.Action):
    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, value: Any, option: str | None = None
    ) -> None:
        specs: list[SourceSpec] = list(getattr(ns, 'sources', None) or [])
        specs.append(SourceSpec(kind=self.const, target=value, origin=f'{option} {value!r}'))
        ns.sources = specs


class _OnLastSource(argparse.Action):
    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, value: Any, option: str | None = None
    ) -> None:
        specs: list[SourceSpec] = getattr(ns, 'sources', None) or []
        if not specs:
            parser.error(f'{option} must follow a source (-s/--source, --mcp-stdio, --mcp-http or --mcp-config)')
        field = self.const
        if getattr(specs[-1], field) is not None:
            parser.error(f'{option} given twice for {specs[-1].origin}')
        setattr(specs[-1], field, value)


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (`--start-timeout`); argparse reports anything else as a usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number of seconds: {text!r}') from None
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'must be a positive number of seconds, got {text!r}')
    return value


def _integer(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}') from None
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}') from None
    return value


def package_version() -> str:
    """The installed package's version, read from its metadata (the core's `__version__`, which maturin writes
    there too, when the metadata is missing: a source checkout on `PYTHONPATH`)."""
    from importlib import metadata

    try:
        return metadata.version('pydantic-ai-toolproxy')
    except metadata.PackageNotFoundError:
        from .. import _core

        return str(_core.__version__)


def build_parser() -> argparse.ArgumentParser:
    """The `toolproxy` parser: global source options, then `inspect`, `search`, `check` or `embed`."""
    parser = argparse.ArgumentParser(
        prog='toolproxy',
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument('--version', action='version', version=f'%(prog)s {package_version()}')
    src = parser.add_argument_group('sources')
    src.add_argument(
        '-s',
        '--source',
        action=_AddSource,
        const='module',
        metavar='MODULE:ATTR',
        dest='sources',
        help='a ToolProxyCapability, toolset, capability, mapping of group -> toolset, or a function returning one',
    )
    src.add_argument(
        '--mcp-stdio',
        action=_AddSource,
        const='mcp-stdio',
        metavar='COMMAND',
        dest='sources',
        help='an MCP server started over stdio (a shell-quoted command line)',
    )
    src.add_argument(
        '--mcp-http',
        action=_AddSource,
        const='mcp-http',
        metavar='URL',
        dest='sources',
        help='an MCP server over streamable HTTP',
    )
    src.add_argument(
        '--mcp-config',
        action=_AddSource,
        const='mcp-config',
        metavar='FILE',
        dest='sources',
        help='an mcpServers JSON file (Claude Desktop, Claude Code, Cursor): one group per server',
    )
    src.add_argument(
        '--group',
        action=_OnLastSource,
        const='group',
        metavar='NAME',
        dest='_group',
        default=argparse.SUPPRESS,
        help='put the source just before it into this group (without: the source is offered directly)',
    )
    src.add_argument(
        '--description',
        action=_OnLastSource,
        const='description',
        metavar='TEXT',
        dest='_description',
        default=argparse.SUPPRESS,
        help='the description of that group, as the model reads it',
    )
    src.add_argument(
        '--config', type=Path, metavar='FILE', help='a TOML or JSON file with [sources] and tool_sources (Host schema)'
    )
    src.add_argument(
        '--lazy',
        action='store_true',
        help='serve the servers of --mcp-config files from their cached listings, starting none that has a fresh one',
    )
    src.add_argument(
        '--listing-cache',
        metavar='PATH|URL',
        help='the MCP listing cache file, or a postgresql:// URL shared by a fleet (off: none; default: '
        'mcp-listings.sqlite3 beside the embedding cache)',
    )
    src.add_argument(
        '--start-timeout',
        type=_seconds,
        metavar='SECONDS',
        help='seconds each stdio MCP server of --mcp-config files may take to start, counted from its own turn '
        '(default 30; an entry\'s "startup_timeout_sec" wins)',
    )
    src.add_argument(
        '--server-log',
        type=Path,
        metavar='DIR',
        help="append each stdio MCP server's stderr to DIR/<group>.log (default: kept off the output; the last "
        'lines of a server that fails to start are quoted in its warning)',
    )
    cfg = parser.add_argument_group('proxy settings (ToolProxyConfig; override the config file)')
    cfg.add_argument('--search-name', metavar='NAME')
    cfg.add_argument('--call-name', metavar='NAME')
    cfg.add_argument('--max-results', type=_integer, metavar='N')
    cfg.add_argument('--max-search-bytes', type=_integer, metavar='BYTES')
    cfg.add_argument(
        '--embedder',
        metavar='MODEL',
        help='hybrid search with this embedder: a model name (openai:text-embedding-3-small) or module:attr',
    )
    cfg.add_argument('--semantic-weight', type=_number, metavar='W', help='share of the semantic signal, 0..1 (0.35)')
    cfg.add_argument(
        '--embedding-cache',
        metavar='PATH|URL',
        help='the embedding cache file, or a postgresql:// URL shared by a fleet (off: memory only; default: see below)',
    )
    cfg.add_argument(
        '--embedding-timeout', type=_number, metavar='S', help='bound of one embedder call for tool texts, s (60)'
    )
    cfg.add_argument('--embedding-wait', type=_number, metavar='S', help='how long a search waits for vectors, s (5)')
    cfg.add_argument('--query-timeout', type=_number, metavar='S', help="bound of a query's embedding, s (5)")
    parser.add_argument('--json', action='store_true', default=argparse.SUPPRESS, help='print JSON for machines')

    commands = parser.add_subparsers(dest='command', metavar='COMMAND')
    inspect = commands.add_parser('inspect', help='groups, tool counts, and the bytes the proxy adds to every request')
    inspect.add_argument('--full', action='store_true', help='also print the control definitions and the instructions')
    search = commands.add_parser('search', help='one search page exactly as the model gets it')
    search.add_argument('query', help='keywords ("" browses)')
    search.add_argument('--group', dest='search_group', metavar='G', help='search only this group')
    search.add_argument('--limit', type=_integer, metavar='N', help='results per page (the model default when omitted)')
    search.add_argument('--offset', type=_integer, metavar='K', help='a next_offset from an earlier page')
    search.add_argument(
        '--explain',
        action='store_true',
        help='also show, for each result, the query words it matched, in which field, and their share of its score',
    )
    check = commands.add_parser('check', help='everything that would fail or misbehave at runtime (exit 1 on errors)')
    check.add_argument('--strict', action='store_true', help='exit 1 on warnings too')
    commands.add_parser(
        'refresh',
        help='start every MCP server of the --mcp-config files and store what each lists in the listing cache',
    )
    commands.add_parser(
        'embed',
        help='embed every grouped tool now and fill the embedding cache (needs --embedder or a config embedder)',
    )
    for sub in commands.choices.values():
        sub.add_argument('--json', action='store_true', default=argparse.SUPPRESS, help='print JSON for machines')
        sub.add_argument(
            '--config', type=Path, metavar='FILE', default=argparse.SUPPRESS, help='the config file (as before COMMAND)'
        )
    return parser


def config_overrides(ns: argparse.Namespace) -> dict[str, Any]:
    """`ToolProxyConfig` fields given on the command line (None = not given). `embedder` is still the text given
    (`_session.open_surface` resolves it) and `embedding_cache` the path text (`off`: memory only)."""
    return {
        'search_name': ns.search_name,
        'call_name': ns.call_name,
        'max_results': ns.max_results,
        'max_search_bytes': ns.max_search_bytes,
        'embedder': ns.embedder,
        'semantic_weight': ns.semantic_weight,
        'embedding_cache': ns.embedding_cache,
        'embedding_timeout': ns.embedding_timeout,
        'embedding_wait': ns.embedding_wait,
        'query_timeout': ns.query_timeout,
    }
