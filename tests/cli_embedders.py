"""Embedding models and tools the hybrid CLI tests load by module path (`--embedder tests/cli_embedders.py:bag`,
`-s tests/cli_embedders.py:tool_groups`): no provider, no model files. Each model is a `BagOfWordsModel`
(tests/embedding_fixtures.py), deterministic across processes.

- `bag`: 256 dimensions; `umbrella`, `rain` and `forecast` mean `weather`, so "should I bring an umbrella" finds
  a weather tool whose text never says umbrella.
- `short`: the same words, but `max_input_tokens` is 6: every longer tool text is cut first (`toolproxy embed`
  counts them).
- `failing`: every document call raises (a provider outage); queries fail too.
- `slow_bag`: `bag`, with each document call sleeping 0.05 s (a bar that visibly moves on a terminal).
- `hanging`: `bag`, but every document call never returns (`toolproxy embed` gives up after `embedding_timeout`).
- `hanging_thread`: `hanging`, stuck in a worker thread (the CLI exits without waiting for it).
- `unnamed`: `bag` reporting model_name `unknown` (never uses the cache: its key would be ambiguous).
- `make_bag`: a zero-argument factory returning `bag`'s twin (the CLI calls factories, as for sources).
- `not_an_embedder`: a str, which the CLI must refuse.

`tool_groups()`: three groups of small tools (`TOOLS`: group -> (description, functions)); no keyword of
"should I bring an umbrella" is in any of them, but the bag model puts it next to `weather/get_forecast`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedding_fixtures import BagOfWordsModel, HangingModel, UnnamedModel
from pydantic_ai.toolsets import FunctionToolset


def get_forecast(city: str) -> str:
    """Forecast for a city over the next days."""
    return 'rain'


def convert_temperature(value: float, unit: str) -> float:
    """Convert a temperature between Celsius and Fahrenheit."""
    return value


def add_note(text: str) -> int:
    """Add a note and return its id."""
    return 1


def read_note(note_id: int) -> str:
    """Read a note by its id."""
    return ''


def delete_note(note_id: int) -> str:
    """Delete a note by its id."""
    return ''


def book_flight(origin: str, destination: str) -> str:
    """Book a flight between two airports."""
    return 'booked'


def cancel_booking(booking_id: str) -> str:
    """Cancel a booking made earlier."""
    return 'cancelled'


TOOLS: dict[str, tuple[str, list[Callable[..., Any]]]] = {
    'weather': ('Weather data and units', [get_forecast, convert_temperature]),
    'notes': ('Personal notes', [add_note, read_note, delete_note]),
    'travel': ('Flights and bookings', [book_flight, cancel_booking]),
}


def tool_groups() -> dict[str, tuple[FunctionToolset[Any], str]]:
    return {name: (FunctionToolset(functions), description) for name, (description, functions) in TOOLS.items()}


DIMENSIONS = 256
"""Vector size of every model here (large enough that few words of the tools' texts share a coordinate)."""
SYNONYMS = {'umbrella': 'weather', 'rain': 'weather', 'forecast': 'weather'}

bag = BagOfWordsModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag')
short = BagOfWordsModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag', max_tokens=6)
failing = BagOfWordsModel(
    dimensions=DIMENSIONS,
    name='cli-bag',
    fail=RuntimeError('embedding quota exceeded'),
    query_fail=RuntimeError('embedding quota exceeded'),
)
slow_bag = BagOfWordsModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag', delay=0.05)


def make_bag() -> BagOfWordsModel:
    return BagOfWordsModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag')


not_an_embedder = 'openai:text-embedding-3-small'
hanging = HangingModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag')
"""`bag`, but every document call never returns (queries answer): `toolproxy embed` must give up on it."""
hanging_thread = HangingModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag', in_thread=True)
"""`hanging`, stuck in a worker thread (a local model in `run_in_executor`): the CLI must not wait for it at exit."""
unnamed = UnnamedModel(dimensions=DIMENSIONS, synonyms=SYNONYMS)
"""`bag` reporting model_name `unknown` (a folder SentenceTransformer without a card): it must not use the cache."""
