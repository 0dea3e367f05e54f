"""One worker of a fleet, for tests/test_fleet.py and `bench.fleet_store`: a real agent run over 640 tools with
hybrid search and a shared store, reporting what it paid the embedder.

`python -m bench.lib.fleet_worker STORE GO [--tools N] [--delay S] [--wait S]` waits until the file GO exists (so workers
start together), runs one `Agent` run whose model searches once, waits until every tool has a vector (its own,
or one another worker stored), and prints one JSON object: `embedded` (texts this process sent to the embedder),
`documents` (embedder inputs, every call), `page` (the search page as the model got it), `seconds`, `warnings`.

STORE is what `ToolProxyConfig.embedding_cache` takes: a SQLite path or a `postgresql://` URL (`memory`: None). The embedder is
`HashingModel`: deterministic hashed bags of words, `delay` seconds per `embed_documents` call (a provider's latency).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
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


_WORD = re.compile(r'[a-z0-9]+')


@dataclass(eq=False)
class HashingModel(EmbeddingModel):
    """A deterministic `EmbeddingModel`: each word of a text adds 1 to one of `dimensions` coordinates (by
    BLAKE2b); `delay` seconds per call; `documents` counts the texts embedded."""

    dimensions: int = 64
    delay: float = 0.0
    documents: int = 0

    @property
    def model_name(self) -> str:
        return 'fleet-hashing'

    @property
    def system(self) -> str:
        return 'bench'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if self.delay:
            await asyncio.sleep(self.delay)
        if input_type == 'document':
            self.documents += len(texts)
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in _WORD.findall(text.lower()):
                slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), 'little')
                vector[slot % self.dimensions] += 1.0
            vectors.append(vector)
        return EmbeddingResult(
            embeddings=vectors, inputs=texts, input_type=input_type, model_name=self.model_name, provider_name='bench'
        )


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
    model = HashingModel(delay=ns.delay)
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
                'documents': model.documents,
                'pending': vectors.pending,
                'page': page,
                'seconds': seconds,
                'warnings': collect.messages,
            }
        )
    )


if __name__ == '__main__':
    asyncio.run(main())
