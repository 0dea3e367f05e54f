"""A host process for tests/test_quiet_host.py: logging configured at WARNING to stderr (as a service does), an
agent with a proxy whose embedder runs on the stand-in model library `transformers` (this folder), three runs of
one search each. Prints `{"runs": N, "calls": M}`: the runs and the stand-in's `encode` calls. With `--verbose-library`
the host sets the library's logger to INFO itself (a setting the package must keep)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pydantic_ai import Agent, Tool
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup


class LibraryModel(EmbeddingModel):
    """An embedding model that embeds with the stand-in library (imported at the first call, as a local model's
    library is)."""

    @property
    def model_name(self) -> str:
        return 'stand-in'

    @property
    def system(self) -> str:
        return 'quiet-test'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        import transformers

        texts, _ = self.prepare_embed(inputs, settings)
        return EmbeddingResult(
            transformers.encode(texts), inputs=texts, input_type=input_type, model_name='stand-in', provider_name='x'
        )


def forecast(city: str) -> str:
    """Weather forecast for a city."""
    return 'sunny'


def convert(value: float) -> float:
    """Convert a temperature from celsius to fahrenheit."""
    return value


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format='LOG %(name)s %(message)s')
    if '--verbose-library' in sys.argv:
        logging.getLogger('transformers').setLevel(logging.INFO)
    proxy = ToolProxyCapability(
        groups={
            'weather': ToolProxyGroup(source=FunctionToolset([Tool(forecast), Tool(convert)]), description='Weather')
        },
        config=ToolProxyConfig(embedder=LibraryModel(), embedding_cache=None),
    )

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:  # each run's own query (a query seen before is not embedded again)
            query = f'will it rain on day {messages[0].parts[-1].content}'  # type: ignore[union-attr]
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': query})])
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(llm), capabilities=[proxy])
    for day in range(3):
        agent.run_sync(str(day))
    import transformers

    print(json.dumps({'runs': 3, 'calls': transformers.CALLS[0]}))


if __name__ == '__main__':
    main()
