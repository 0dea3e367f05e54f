"""One worker of a fleet, for tests/test_fleet.py and bench/fleet.py: a real agent run over 640 tools with hybrid
search and a shared store, reporting what it paid the embedder.

`python fleet_worker.py STORE GO [--tools N] [--delay S] [--wait S]` waits until the file GO exists (so workers
start together), runs one `Agent` run whose model searches once, waits until every tool has a vector (its own,
or one another worker stored), and prints one JSON object: `embedded` (texts this process sent to the embedder),
`documents` (embedder inputs, every call), `page` (the search page as the model got it), `seconds`, `warnings`.

STORE is what `ToolProxyConfig.embedding_cache` takes: a SQLite path or a `postgresql://` URL (`memory`: None). The embedder is the
tests' deterministic `BagOfWordsModel` with `delay` seconds per `embed_documents` call (a provider's latency).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its neighbours
from embedding_fixtures import BagOfWordsModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

TOPICS = ['weather', 'files', 'mail', 'billing', 'calendar', 'maps', 'music', 'tickets']
WORDS = [
    'alpha',
    'bravo',
    'charlie',
    'delta',
    'echo',
    'foxtrot',
    'golf',
    'hotel',
    'india',
    'juliet',
    'kilo',
    'lima',
    'mike',
    'november',
    'oscar',
    'papa',
]


def fleet_groups(tools: int) -> dict[str, ToolProxyGroup]:
    """`tools` function tools in 8 groups, each with distinct words (the same in every process)."""
    sources: dict[str, FunctionToolset[Any]] = {topic: FunctionToolset() for topic in TOPICS}
    for i in range(tools):
        topic = TOPICS[i % len(TOPICS)]
        words = ' '.join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5))
        sources[topic].add_function(
            lambda x='': x, name=f'{topic}_tool_{i}', description=f'{topic.title()} tool {i}: {words} {i % 97}.'
        )
    return {
        topic: ToolProxyGroup(source=source, description=f'{topic.title()} tools') for topic, source in sources.items()
    }


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('store')
    parser.add_argument('go')
    parser.add_argument('--tools', type=int, default=640)
    parser.add_argument('--delay', type=float, default=0.05)
    parser.add_argument('--wait', type=float, default=60.0)
    ns = parser.parse_args()
    collect = Collect()
    logging.getLogger('pydantic_ai_toolproxy').addHandler(collect)
    model = BagOfWordsModel(dimensions=64, delay=ns.delay, name='fleet')
    capability = ToolProxyCapability(
        groups=fleet_groups(ns.tools),
        config=ToolProxyConfig(
            embedder=model, embedding_cache=None if ns.store == 'memory' else ns.store, embedding_wait=ns.wait
        ),
    )
    search = capability.config.search_name

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(search, {'query': 'weather alpha delta tool', 'limit': 8})])
        return ModelResponse(parts=[TextPart('done')])

    go = Path(ns.go)
    while not go.exists():
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    result = await Agent(FunctionModel(respond), capabilities=[capability]).run('go')
    vectors = capability.tool_vectors
    assert vectors is not None
    deadline = time.monotonic() + 120
    while vectors.pending and time.monotonic() < deadline:  # the rest arrives in the background
        await asyncio.sleep(0.05)
    seconds = time.perf_counter() - started
    [page] = [
        json.loads(p.model_response_str())
        for m in result.all_messages()
        for p in getattr(m, 'parts', [])
        if isinstance(p, ToolReturnPart) and p.tool_name == search
    ]
    print(
        json.dumps(
            {
                'embedded': vectors.embedded,
                'documents': len(model.documents()),
                'pending': vectors.pending,
                'page': page,
                'seconds': seconds,
                'warnings': collect.messages,
            }
        )
    )


if __name__ == '__main__':
    asyncio.run(main())
