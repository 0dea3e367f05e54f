"""`toolproxy`: inspect, search and check a tool grouping before a model ever sees it.

    toolproxy [sources] inspect [--full] [--json]
    toolproxy [sources] search QUERY [--group G] [--limit N] [--offset K] [--json]
    toolproxy [sources] check [--strict] [--json]
    toolproxy [sources] --embedder MODEL embed [--json]
    toolproxy --mcp-config FILE refresh [--json]

Also `python -m pydantic_ai_toolproxy`. Every figure comes from a real `pydantic_ai.Agent` run over the
sources under a real `ToolProxyCapability`, driven by a scripted `FunctionModel` (`_probe`), so what the
CLI shows is what the model gets. Exit status: 0 ok; 1 something would fail at runtime (or the search
was refused); 2 bad arguments or sources that cannot be loaded; 141 stdout was closed early (`| head`),
without a traceback.

On a terminal, progress is shown on stderr while sources load and probes run, and erased before the
first result line, so the screen ends with what piped output holds. Pydantic AI's first-run banner is
turned off (`pydantic_ai.BANNER_ENABLED`): the CLI owns its output. Warnings the package logs (an embedding cache
that cannot be used, an embedder that fails) are shown on stderr as `toolproxy: warning: ...`. After an embedder
call past `embedding_timeout` the process exits at once when the command is done, without waiting for a worker
thread the call may still hold (a local model stuck in `run_in_executor`).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ._args import build_parser, config_overrides
from ._spec import SourceError

if TYPE_CHECKING:
    from ._progress import Progress

__all__ = ('main',)

# `--help` and `--version` answer from `build_parser` alone: Pydantic AI, the Rust core, rich and the commands are
# imported only once a command runs (`python -X importtime -m pydantic_ai_toolproxy --help` shows it).


async def _run(ns: argparse.Namespace) -> int:
    from ._progress import Progress
    from ._render import Output
    from ._session import open_surface
    from .cmd_check import run_check
    from .cmd_embed import run_embed
    from .cmd_inspect import run_inspect
    from .cmd_refresh import run_refresh
    from .cmd_search import run_search

    progress = Progress()
    out = Output(as_json=getattr(ns, 'json', False), before_write=progress.close)  # the real stdout, taken first
    with progress, _warnings_shown(progress):
        async with open_surface(
            ns.sources or [],
            ns.config,
            config_overrides(ns),
            progress,
            ns.server_log,
            lazy=ns.lazy,
            listing_cache=ns.listing_cache,
            start_timeout=getattr(ns, 'start_timeout', None),
            refresh=ns.command == 'refresh',
        ) as surface:
            command = ns.command
            for message in surface.listing_notes:
                out.warning(message)
            if command == 'refresh':
                return run_refresh(surface, out)
            if command == 'check':  # reports servers that did not start as errors
                return await run_check(surface, out, progress, strict=ns.strict)
            for _, message in surface.unavailable:
                out.warning(message)
            if command == 'embed':
                return await run_embed(surface, out, progress)
            if command == 'inspect':
                return await run_inspect(surface, out, progress, full=ns.full)
            return await run_search(
                surface,
                out,
                progress,
                query=ns.query,
                group=ns.search_group,
                limit=ns.limit,
                offset=ns.offset,
                explain=ns.explain,
            )


async def _run_and_leave(ns: argparse.Namespace) -> int:
    """`_run`, then, when an embedder call was given up on (`hybrid.embedder.gave_up`), exit the process at once: the call
    may still hold a worker thread (a local model stuck in `run_in_executor`), which `asyncio.run`'s executor
    shutdown and the interpreter's exit would wait for forever."""
    from ..hybrid.embedder import gave_up

    status = await _run(ns)
    if gave_up():
        from ..hybrid.fill import finish_at_exit

        finish_at_exit(0.0)  # os._exit skips the exit hooks: release the embedding claims still held now
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            status = 141
        sys.stderr.flush()
        os._exit(status)
    return status


@contextmanager
def _warnings_shown(progress: Progress) -> Iterator[None]:
    """Show the package's logged warnings as `toolproxy: warning: ...` lines while a command runs."""
    from ._progress import WarningHandler

    logger = logging.getLogger('pydantic_ai_toolproxy')
    handler = WarningHandler(progress)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `toolproxy` command line with `argv` (default `sys.argv[1:]`) and return its exit status.

    Status 2 (with a message on stderr) for bad arguments, a source that cannot be loaded or started, an
    invalid group or config value, or a source whose own code fails while its tools are prepared (the message
    names the exception; `TOOLPROXY_TRACEBACK=1` shows its traceback instead); otherwise the command's own status (see the module docstring).
    """
    parser = build_parser()
    ns = parser.parse_args(argv)  # `--help` and `--version` exit here, before anything heavy is imported
    if ns.command is None:
        parser.print_help(sys.stderr)
        return 2
    import asyncio

    import pydantic_ai

    from .._messages import cut, encodes
    from ._render import error

    for name in ('query', 'search_group'):
        value = getattr(ns, name, None)
        if isinstance(value, str) and not encodes(value):
            print(f'toolproxy: error: {name.removeprefix("search_")} is not valid UTF-8 text', file=sys.stderr)
            return 2
    pydantic_ai.BANNER_ENABLED = False  # a public switch of Pydantic AI; older versions ignore it
    try:
        status = asyncio.run(_run_and_leave(ns))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except SourceError as exc:
        error(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`toolproxy ... | head -3`): stop quietly, as a process killed by SIGPIPE would.
        # Point stdout at /dev/null so the interpreter's final flush does not report the pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a source's own code failed (e.g. its `get_tools` raised): one line, not a traceback
        if os.environ.get('TOOLPROXY_TRACEBACK'):
            raise
        error(
            f'the sources could not be prepared: {type(exc).__name__}: {cut(str(exc), 300)} '
            '(set TOOLPROXY_TRACEBACK=1 to see the traceback)'
        )
        return 2
