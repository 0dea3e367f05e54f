"""The BFCL search-quality corpus: 1,582 tool definitions and 2,501 questions.

Definition (reproduces the issue's counts exactly with ``bfcl-eval==2026.3.23``):

* **Questions**: every row of the ten non-multi-turn BFCL categories that have ground truth in
  ``possible_answer/`` (``simple_python``, ``simple_java``, ``simple_javascript``, ``multiple``,
  ``parallel``, ``parallel_multiple``, ``live_simple``, ``live_multiple``, ``live_parallel``,
  ``live_parallel_multiple``): 2,501. The query is the user message(s) of the question's single turn,
  joined with newlines (system messages are not part of the query). The expected tools are the
  distinct function names of the ground-truth calls (one for most categories; several for the
  ``parallel_multiple`` ones).
* **Tools**: the function definitions of those ten categories plus the multi-turn API documentation
  (``multi_turn_func_doc/*.json``), deduplicated by BFCL name with the first definition winning
  (categories in sorted file order, then the documentation files in sorted order, lines in file
  order): 1,437 + 153 - 8 shared names = 1,582.

Tools get the provider-safe names, JSON-Schema parameters and topic groups of the demo
(``examples/bfcl_tools.py``), so the group structure measured here is the demo's. Only the JSON data
files of the installed ``bfcl-eval`` are read.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The demo's conversions (private helpers of the example loader, reused so both see the same tools).
from examples.bfcl_tools import GROUP_DESCRIPTIONS, bfcl_data_dir, convert_parameters, topic_group, unique_tool_name

__all__ = ['CATEGORIES', 'GROUP_DESCRIPTIONS', 'Question', 'Tool', 'load_questions', 'load_tools']

CATEGORIES: tuple[str, ...] = (
    'live_multiple',
    'live_parallel',
    'live_parallel_multiple',
    'live_simple',
    'multiple',
    'parallel',
    'parallel_multiple',
    'simple_java',
    'simple_javascript',
    'simple_python',
)
"""The non-multi-turn BFCL categories with ground truth, in sorted file order."""


@dataclass(frozen=True)
class Tool:
    """One unique BFCL function as a searchable tool."""

    name: str
    """Provider-safe local tool name (``^[A-Za-z0-9_-]{1,64}$``), unique in the corpus."""
    original_name: str
    """Name as written in BFCL (e.g. ``math.factorial``)."""
    group: str
    """The demo's topic group (a key of ``GROUP_DESCRIPTIONS``)."""
    description: str
    parameters: dict[str, Any]
    """JSON Schema object of the parameters, converted as the demo does."""


@dataclass(frozen=True)
class Question:
    """One BFCL question with its expected tools."""

    id: str
    category: str
    query: str
    expected: frozenset[str]
    """Provider-safe names of the ground-truth tools (non-empty)."""


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines() if line.strip()]


def _category_file(category: str) -> Path:
    return bfcl_data_dir() / f'BFCL_v4_{category}.json'


@functools.cache
def _tools() -> tuple[Tool, ...]:
    sources: list[tuple[str, dict[str, Any]]] = []
    for category in CATEGORIES:
        for row in _read_jsonl(_category_file(category)):
            sources.extend((category, fn) for fn in row.get('function') or [])
    for path in sorted((bfcl_data_dir() / 'multi_turn_func_doc').glob('*.json')):
        sources.extend(('multi_turn', fn) for fn in _read_jsonl(path))
    seen: dict[str, Tool] = {}
    taken: set[str] = set()
    for category, fn in sources:
        original = fn['name']
        if original in seen:
            continue
        description = (fn.get('description') or '').strip() or original
        name = unique_tool_name(original, taken)
        taken.add(name)
        seen[original] = Tool(
            name=name,
            original_name=original,
            group=topic_group(category, original, description),
            description=description,
            parameters=convert_parameters(fn.get('parameters') or {}, category),
        )
    return tuple(seen.values())


def load_tools() -> list[Tool]:
    """Return the 1,582 unique tools, in first-seen order (see the module docstring).

    Raises ``ModuleNotFoundError`` when ``bfcl-eval`` is not installed.
    """
    return list(_tools())


def load_questions() -> list[Question]:
    """Return the 2,501 questions, by category in sorted order, then file order.

    Raises ``KeyError`` if a ground-truth function has no definition (never with the pinned data).
    """
    names = {tool.original_name: tool.name for tool in _tools()}
    questions: list[Question] = []
    for category in CATEGORIES:
        rows = {row['id']: row for row in _read_jsonl(_category_file(category))}
        for answer in _read_jsonl(bfcl_data_dir() / 'possible_answer' / _category_file(category).name):
            turn = rows[answer['id']]['question'][0]
            query = '\n'.join(message['content'] for message in turn if message['role'] == 'user')
            expected = frozenset(names[original] for call in answer['ground_truth'] for original in call)
            questions.append(Question(answer['id'], category, query, expected))
    return questions


if __name__ == '__main__':
    tools, questions = load_tools(), load_questions()
    print(f'tools: {len(tools)}, questions: {len(questions)}')
