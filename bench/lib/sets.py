"""The two benchmark sets as the quality benchmarks rank them: `(tools, group descriptions, questions)`, each
question's expected tools as canonical names `group__tool`."""

from __future__ import annotations

from bench.lib.corpus import GROUP_DESCRIPTIONS, Question, Tool, load_questions, load_tools
from pydantic_ai_toolproxy.grouping.names import canonical_name


def bfcl() -> tuple[list[Tool], dict[str, str], list[Question]]:
    """The BFCL corpus with expected tools as `group__tool`."""
    tools = load_tools()
    key = {tool.name: canonical_name(tool.group, tool.name) for tool in tools}
    questions = [
        Question(q.id, q.category, q.query, frozenset(key[name] for name in q.expected)) for q in load_questions()
    ]
    return tools, dict(GROUP_DESCRIPTIONS), questions


def agent() -> tuple[list[Tool], dict[str, str], list[Question]]:
    """The agent-query development set."""
    from bench.lib.agent_corpus import group_descriptions, load_agent_queries, load_agent_tools

    return load_agent_tools(), group_descriptions(), load_agent_queries()
