"""One short-lived process of tests/test_hybrid_short_lived.py: an agent run with one search over `TOOLS` new tools,
default hybrid settings, the SQLite embedding cache PATH, then a normal exit (no explicit clean-up).

`python short_lived_worker.py PATH SECONDS_PER_TEXT [hang]` prints one JSON object: `{"search": seconds the run's
search took}`. The embedder is
the deterministic bag of words, sleeping SECONDS_PER_TEXT per text of each document call (a CPU model's pace); with
`hang`, every document call never returns.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from embedding_fixtures import BagOfWordsModel
from pydantic_ai import Agent, Tool
from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

TOOLS = 120
NAME = 'short-lived'


@dataclass(eq=False)
class PacedModel(BagOfWordsModel):
    """`BagOfWordsModel` taking `per_text` seconds per document text (a batch of 64 takes 64 x `per_text`)."""

    per_text: float = 0.0
    hang: bool = False

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        if input_type == 'document':
            if self.hang:
                await asyncio.Event().wait()
            await asyncio.sleep(self.per_text * (1 if isinstance(inputs, str) else len(inputs)))
        return await super().embed(inputs, input_type=input_type, settings=settings)


def tool_texts() -> list[tuple[str, str]]:
    """`(name, description)` of every tool: short ones, and every fifth a long description (about 300 words)."""
    out = []
    for i in range(TOOLS):
        words = f'record {i} of the ledger in area {i % 7} for team {i % 11}'
        long = ' '.join(f'detail{j} of item {i}' for j in range(75)) if i % 5 == 0 else ''
        out.append((f'tool_{i}', f'Update {words}. {long}'.strip()))
    return out


def update(record: int) -> str:
    """Placeholder body shared by every tool."""
    return 'ok'


def main() -> None:
    path, per_text, *rest = sys.argv[1:]
    tools = [Tool(update, name=name, description=description) for name, description in tool_texts()]
    model = PacedModel(dimensions=64, name=NAME, per_text=float(per_text), hang='hang' in rest)
    config = ToolProxyConfig(embedder=model, embedding_cache=path)  # every other setting at its default
    proxy = ToolProxyCapability(
        groups={'ledger': ToolProxyGroup(source=FunctionToolset(tools), description='Ledger records')}, config=config
    )
    took: list[float] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            took.append(time.monotonic())
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'update the ledger record 7'})])
        took.append(time.monotonic())
        return ModelResponse(parts=[TextPart('done')])

    Agent(FunctionModel(llm), capabilities=[proxy]).run_sync('go')
    print(json.dumps({'search': took[1] - took[0]}))


if __name__ == '__main__':
    main()
