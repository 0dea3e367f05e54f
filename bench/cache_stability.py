"""Prompt-cache stability: how many requests of a run keep the previous request's `tools`, instructions and messages.

    .venv/bin/python -m bench.cache_stability          # a few seconds; no network beyond loopback

ToolProxy against Pydantic AI's `ToolSearch`, through `OpenAIChatModel` against a recording server on loopback
(`bench/lib/prompt_cache.py` says what is counted; `tests/test_prompt_cache.py` checks the figures
docs/performance.md shows).
"""

from __future__ import annotations

import asyncio

from bench.lib.prompt_cache import TASKS, measure, table


def main() -> None:
    results = asyncio.run(measure())
    print(f'{len(TASKS)} tasks (a search and a call each, then a text answer), OpenAIChatModel on loopback:')
    print('\n'.join(table(results)))


if __name__ == '__main__':
    main()
