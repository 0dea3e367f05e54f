"""Where a ToolProxy step's time goes: cProfile of real-client proxy runs (`bench/lib/real_client.py`'s
ToolProxy row: `OpenAIChatModel` against the loopback server, a search step, a call step, a text step).

Three measurements of the same agent, after a warm-up run that builds the search index:

1. ToolProxy's own per-step work timed without a profiler (`agent_steps._timing_own_work`: member wrapping,
   merge, directory, index sync, hiding, guidance, guard), per step;
2. a profile of whole runs, self time grouped by package (ToolProxy, Pydantic AI, the openai SDK, httpx,
   pydantic, ...), and the top functions;
3. a profile switched on only inside ToolProxy's own per-step entry points, so it splits that work alone
   (including what it calls in Pydantic AI or the standard library).

The profiles count CPU time of this process (`time.process_time`), not waiting for the server. cProfile's own
overhead inflates functions with many small calls: read shares, not absolute times.
Usage: `.venv-bench/bin/python -m bench.profile_step [--tools 100000] [--runs 2] [--top 15]` (about 12 minutes at
100,000 tools on a shared 2-core machine, most of it the CPU-timed whole-run profile; `--tools 10000` shows the same
shape, since the per-step work is per listed tool).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import re
import time
from collections import defaultdict
from typing import Any

from bench.lib import real_client
from bench.lib.agent_steps import _timing_own_work, toolsets  # pyright: ignore[reportPrivateUsage]
from bench.lib.loopback_llm import LoopbackServer
from bench.lib.replicas import corpus
from examples.bfcl_tools import load_bfcl_functions
from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.capability import ProxyGuidance
from pydantic_ai_toolproxy.controls.surface import ProxySurfaceToolset
from pydantic_ai_toolproxy.grouping.members import GroupMemberToolset

OWN_WORK = (
    (GroupMemberToolset, 'members_of', False),
    (ProxySurfaceToolset, 'merge', False),
    (ProxyGuidance, '_guidance', False),
    (ToolProxyCapability, 'before_model_request', True),
    (ToolProxyCapability, 'before_tool_validate', True),
)
"""The entry points `agent_steps._timing_own_work` times (sync, or async without a suspending await)."""


PACKAGES = (
    ('/pydantic_ai_toolproxy/', 'ToolProxy (python/)'),
    ('/pydantic_ai/', 'Pydantic AI'),
    ('/openai/', 'openai SDK'),
    ('/httpx', 'httpx / httpcore'),
    ('/httpcore', 'httpx / httpcore'),
    ('/pydantic_core/', 'pydantic'),
    ('/pydantic/', 'pydantic'),
    ('/anyio/', 'anyio'),
    ('/h11/', 'h11'),
    ('/bench/', 'this benchmark'),
)
STDLIB = re.compile(r'/lib/python3\.\d+/')


def package(filename: str) -> str | None:
    """The package a function belongs to; None for the standard library and builtins (counted to their callers)."""
    path = filename.replace(os.sep, '/')
    for marker, name in PACKAGES:
        if marker in path:
            return name
    if filename == '~' or (STDLIB.search(path) and '/site-packages/' not in path):
        return None
    return 'other'


def label(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == '~':
        return name
    path = filename.replace(os.sep, '/')
    if '/site-packages/' in path:
        path = path.split('/site-packages/', 1)[1]
    elif '/python/' in path:
        path = path.split('/python/', 1)[1]
    elif STDLIB.search(path):
        path = STDLIB.split(path, 1)[1]
    return f'{path}:{line} {name}'


def owners(raw: dict[Any, Any]) -> dict[Any, dict[str, float]]:
    """For each function, the packages its self time is counted to: its own, or for the standard library and
    builtins, their callers' owners in proportion to the time each caller's calls took (recursively)."""
    memo: dict[Any, dict[str, float]] = {}

    def resolve(func: Any, visiting: frozenset[Any]) -> dict[str, float]:
        if func in memo:
            return memo[func]
        own = package(func[0])
        if own is not None:
            return {own: 1.0}
        callers = raw[func][4]
        weights: dict[str, float] = defaultdict(float)
        total = sum(entry[2] for entry in callers.values()) if callers else 0.0
        for caller, entry in (callers or {}).items():
            if caller in visiting or caller not in raw:
                continue
            for pkg, part in resolve(caller, visiting | {func}).items():
                weights[pkg] += part * (entry[2] / total if total else 1 / len(callers))
        result = dict(weights) or {'standard library / builtins': 1.0}
        norm = sum(result.values())
        result = {pkg: part / norm for pkg, part in result.items()}
        if not visiting:
            memo[func] = result
        return result

    return {func: resolve(func, frozenset()) for func in raw}


def report(stats: pstats.Stats, title: str, top: int) -> None:
    raw: dict[Any, Any] = {
        func: entry
        for func, entry in stats.stats.items()  # type: ignore[attr-defined]
        if '_lsprof.Profiler' not in func[2]
    }  # the profiler's own switch
    total = sum(entry[2] for entry in raw.values())  # self time of every function
    by_package: dict[str, float] = defaultdict(float)
    for func, shares in owners(raw).items():
        for pkg, part in shares.items():
            by_package[pkg] += raw[func][2] * part
    print(
        f"\n### {title}\n\nprofiled self time {total:.2f} s; the standard library's and builtins' time is counted to "
        'the package that called them\n'
    )
    print('| package | time | share |\n| --- | ---: | ---: |')
    for pkg, tt in sorted(by_package.items(), key=lambda kv: -kv[1]):
        if tt / total >= 0.005:
            print(f'| {pkg} | {tt:.2f} s | {100 * tt / total:.1f}% |')
    print(
        f'\nTop {top} functions by self time:\n\n| function | calls | self | share | cumulative |\n| --- | ---: | ---: | ---: | ---: |'
    )
    for func, (_cc, nc, tt, ct, _callers) in sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]:
        print(f'| `{label(func)}` | {nc:,} | {tt:.3f} s | {100 * tt / total:.1f}% | {ct:.3f} s |')


def profile_own_work(profiler: cProfile.Profile) -> list[tuple[type, str, Any]]:
    """Patches the own-work entry points to switch `profiler` on while the outermost one runs."""
    depth = [0]
    patched: list[tuple[type, str, Any]] = []
    for cls, name, is_async in OWN_WORK:
        original = cls.__dict__[name]
        if is_async:

            async def wrapper(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
                depth[0] += 1
                if depth[0] == 1:
                    profiler.enable()
                try:
                    return await __original(*args, **kwargs)
                finally:
                    depth[0] -= 1
                    if depth[0] == 0:
                        profiler.disable()
        else:

            def wrapper(*args: Any, __original: Any = original, **kwargs: Any) -> Any:  # type: ignore[misc]
                depth[0] += 1
                if depth[0] == 1:
                    profiler.enable()
                try:
                    return __original(*args, **kwargs)
                finally:
                    depth[0] -= 1
                    if depth[0] == 0:
                        profiler.disable()

        patched.append((cls, name, original))
        setattr(cls, name, wrapper)
    return patched


async def profiled_run(
    profiler: cProfile.Profile | None, agent: Any, timed: Any, server: LoopbackServer, script: list[dict[str, Any]]
) -> float:
    """One run, `profiler` on for the run only (not the collection and server bookkeeping before it); its CPU s."""
    gc.collect()
    server.reset()
    timed.marks.clear()
    t = time.process_time()
    if profiler is not None:
        profiler.enable()
    try:
        result = await agent.run(real_client.script_prompt(script))
    finally:
        if profiler is not None:
            profiler.disable()
    assert result.output == 'done'
    return time.process_time() - t


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--tools', type=int, default=100_000)
    parser.add_argument('--runs', type=int, default=2)
    parser.add_argument('--top', type=int, default=15)
    args = parser.parse_args()
    fns = corpus(args.tools, load_bfcl_functions())
    sets = toolsets(fns)
    with LoopbackServer() as server:
        timed = real_client.provider_model('openai', server)
        agent = real_client.agents(fns, timed, 'openai', sets)[real_client.PROXY]
        script = real_client.scripts(real_client.targets(fns, 1))[real_client.PROXY]
        steps = len(script) + 1
        await real_client.run_once(agent, timed, server, script[:1], 0, None)  # warm-up: builds the index

        own: list[float] = []
        cpu: list[float] = []
        for _ in range(args.runs):
            total = [0.0]
            with _timing_own_work(total):
                cpu.append(await profiled_run(None, agent, timed, server, script) * 1000 / steps)
            own.append(total[0] * 1000 / steps)
        print(f'# ToolProxy step profile: {args.tools:,} tools, OpenAIChatModel on the loopback server\n')
        print(
            f'Unprofiled, per step (median of {args.runs} runs of {steps} steps): client CPU {sorted(cpu)[len(cpu) // 2]:,.0f} ms, '
            f"ToolProxy's own work {sorted(own)[len(own) // 2]:,.0f} ms ({100 * sorted(own)[len(own) // 2] / sorted(cpu)[len(cpu) // 2]:.1f}%)."
        )

        whole = cProfile.Profile(time.process_time)
        for _ in range(args.runs):
            await profiled_run(whole, agent, timed, server, script)
        report(pstats.Stats(whole), f'Whole proxy runs ({args.runs} x {steps} steps)', args.top)

        mine = cProfile.Profile(time.process_time)
        patched = profile_own_work(mine)
        try:
            for _ in range(args.runs):
                await profiled_run(None, agent, timed, server, script)
        finally:
            for cls, name, original in reversed(patched):
                setattr(cls, name, original)
        report(pstats.Stats(mine), "ToolProxy's own per-step work only", args.top)


if __name__ == '__main__':
    asyncio.run(main())
