"""Pydantic AI's own `ToolSearch` over BFCL's deferred tools: `search_strategy()` against the `'keywords'` strategy.

    .venv-bench/bin/python -m bench.quality --corpus toolsearch      # this table only (also part of --corpus all)

Every question is searched through real `Agent` runs: a `FunctionModel` answers the first request with one
`search_tools` call per question (`{"queries": [question]}`, 50 questions a run, so nothing is discovered yet
when they search) and ends the run on the next; each call's discovered names are read back from the run's
messages. Both rows use `ToolSearch(strategy=..., max_results=10)` over the same deferred tools: Pydantic AI's
keyword overlap (`keywords_search`, what `strategy='keywords'` runs) and this package's `search_strategy()`.

* 1,000 tools: the first 1,000 BFCL tools (`bench/lib/corpus.py` order) and the questions whose expected tools are all
  among them.
* 10,000 tools: the 1,582 BFCL tools, then distractors: the `k`-th distractor of tool `i` is named `{name_i}_r{k}`
  and carries the description and schema of another tool, `(i + 101 k) mod 1,582`; every question, and only the
  BFCL tools count as found. So every name and every text occurs several times over, as in a collection of
  many similar servers, yet no distractor is the expected tool's copy (exact copies would tie with it and turn
  Recall@5 into Recall@1).

"ms per call" is the strategy function's own time per `search_tools` call, timed around the function
`ToolSearch` calls (median and mean over the questions), measured in one process; `search_strategy()`'s first call,
which builds its index, is reported apart. The runs' other per-step costs (listing the deferred tools) are the
same for both rows.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.lib.corpus import Question, Tool, load_questions, load_tools

PER_RUN = 50
"""Questions searched in one agent run (one `search_tools` call each, all in its first step)."""
SIZES = (1_000, 10_000)


@dataclass(frozen=True)
class Row:
    """One strategy at one corpus size: first ranks (None = not in the first 10) and seconds per call."""

    label: str
    ranks: list[int | None]
    seconds: list[float]
    first_call: float | None = None


class Timed:
    """A `ToolSearch` strategy that times each call of the strategy it wraps."""

    def __init__(self, fn: Callable[..., Sequence[str]]) -> None:
        self.fn = fn
        self.seconds: list[float] = []

    def __call__(self, ctx: Any, queries: Sequence[str], tools: Sequence[Any]) -> list[str]:
        started = time.perf_counter()
        names = list(self.fn(ctx, queries, tools))
        self.seconds.append(time.perf_counter() - started)
        return names


DISTRACTOR_STRIDE = 101
"""The `k`-th distractor of tool `i` carries the text of tool `(i + DISTRACTOR_STRIDE * k) mod len(base)` (never `i`
itself while `DISTRACTOR_STRIDE * k < len(base)`, true up to 15 distractors per tool)."""


def deferred_tools(n: int) -> list[Tool]:
    """`n` tools: the first `n` BFCL tools when `n` is at most the corpus, else the corpus then distractors named
    `{name_i}_r{k}` with the description and schema of tool `(i + DISTRACTOR_STRIDE * k) mod len(base)`."""
    base = load_tools()
    if n <= len(base):
        return base[:n]
    out = list(base)
    k = 1
    while len(out) < n:
        for i, tool in enumerate(base):
            if len(out) >= n:
                break
            text = base[(i + DISTRACTOR_STRIDE * k) % len(base)]
            suffix = f'_r{k}'
            name = tool.name[: 64 - len(suffix)] + suffix
            out.append(Tool(name, tool.original_name, tool.group, text.description, text.parameters))
        k += 1
    return out


def _agent_tools(tools: Sequence[Tool]) -> list[Any]:
    from pydantic_ai.tools import Tool as PydanticTool

    def fn(**kwargs: Any) -> str:
        return 'ok'

    out = []
    for tool in tools:
        made = PydanticTool.from_schema(fn, name=tool.name, description=tool.description, json_schema=tool.parameters)
        made.defer_loading = True
        out.append(made)
    return out


async def _search_all(strategy: Any, agent_tools: list[Any], questions: Sequence[Question]) -> list[list[str]]:
    """Each question's discovered names, through real agent runs of `PER_RUN` questions each."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ToolSearch
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    found: list[list[str]] = []
    for start in range(0, len(questions), PER_RUN):
        chunk = questions[start : start + PER_RUN]

        def model(messages: list[Any], info: AgentInfo, chunk: Sequence[Question] = chunk) -> ModelResponse:
            if len(messages) > 1:
                return ModelResponse(parts=[TextPart('done')])
            return ModelResponse(
                parts=[
                    ToolCallPart('search_tools', {'queries': [q.query]}, tool_call_id=f'q{i}')
                    for i, q in enumerate(chunk)
                ]
            )

        agent = Agent(
            FunctionModel(model), tools=agent_tools, capabilities=[ToolSearch(strategy=strategy, max_results=10)]
        )
        result = await agent.run('search')
        by_id: dict[str, list[str]] = {}
        for message in result.all_messages():
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if isinstance(part, ToolReturnPart) and part.tool_name == 'search_tools':
                        by_id[part.tool_call_id] = [m['name'] for m in part.content['discovered_tools']]
        found += [by_id[f'q{i}'] for i in range(len(chunk))]
    return found


def questions_for(tools: Sequence[Tool]) -> list[Question]:
    """The BFCL questions whose expected tools are all among `tools`."""
    names = {t.name for t in tools}
    return [q for q in load_questions() if q.expected <= names]


def first_ranks(strategy: Any, tools: Sequence[Tool], questions: Sequence[Question]) -> list[int | None]:
    """Each question's first rank (None = not in the first 10) when `ToolSearch(strategy=strategy)` searches it
    over `tools` in real agent runs."""
    found = asyncio.run(_search_all(strategy, _agent_tools(tools), questions))
    return [
        next((r for r, name in enumerate(ranked[:10], 1) if name in question.expected), None)
        for question, ranked in zip(questions, found)
    ]


def measure(n: int) -> tuple[int, list[Row]]:
    """Both rows at `n` deferred tools; returns the number of questions and the rows."""
    from pydantic_ai_toolproxy import search_strategy
    from pydantic_ai_toolproxy._private import keywords_search

    tools = deferred_tools(n)
    questions = questions_for(tools)
    rows = []
    for label, fn in (
        ("Pydantic AI ToolSearch(strategy='keywords')", keywords_search),
        ('ToolSearch(strategy=search_strategy())', search_strategy(max_results=10)),
    ):
        timed = Timed(fn)
        ranks = first_ranks(timed, tools, questions)
        first = None
        seconds = timed.seconds
        if fn is not keywords_search:
            first, seconds = seconds[0], seconds[1:]
        rows.append(Row(label, ranks, seconds, first))
    return len(questions), rows


def report(sizes: Sequence[int] = SIZES) -> None:
    """Print the Markdown table of both strategies at each size."""
    from bench.lib.metrics import scores

    print(
        '\n## Pydantic AI ToolSearch over BFCL deferred tools: the keywords strategy against search_strategy() '
        '(real Agent runs, max_results=10)'
    )
    print()
    print(
        '| deferred tools | questions | strategy | Recall@1 | Recall@5 | Recall@10 | MRR@10 | ms / call (median, mean) |'
    )
    print('| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |')
    notes = []
    for n in sizes:
        started = time.perf_counter()
        count, rows = measure(n)
        for row in rows:
            s = scores(row.ranks)
            ms = [1000 * x for x in row.seconds]
            print(
                f'| {n:,} | {count:,} | {row.label} | {s.recall_1:.3f} | {s.recall_5:.3f} | {s.recall_10:.3f} | '
                f'{s.mrr_10:.3f} | {statistics.median(ms):.2f}, {statistics.fmean(ms):.2f} |'
            )
            if row.first_call is not None:
                notes.append(
                    f'{n:,} tools: the first call, which builds the index, took {1000 * row.first_call:.0f} ms'
                )
        notes.append(f'{n:,} tools: {time.perf_counter() - started:.0f} s for both rows')
    print('\n' + '; '.join(notes) + '.')
