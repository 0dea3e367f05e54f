"""Text the model reads: control descriptions with the current group summaries, and the generated guidance.

Every generated text names the controls by their configured names (`ToolProxyConfig.search_name`, `call_name`)
and limits (`default_limit`, `max_results`); the guidance has five points: discover before calling, call with the
returned group, tool and arguments, reuse a known schema, page with `next_offset` and search again when tools
change, and never blindly repeat a mutation whose outcome is uncertain (docs/usage.md, "How it behaves").
"""

from __future__ import annotations

from collections.abc import Mapping

from ..config import ToolProxyConfig

__all__ = ('call_description', 'group_summary', 'guidance', 'search_description')


def group_summary(groups: list[str], descriptions: Mapping[str, str]) -> str:
    """One line per current group: `- name: description`."""
    return '\n'.join(f'- {name}: {" ".join(descriptions[name].split())}' for name in groups)


def search_description(config: ToolProxyConfig, summary: str) -> str:
    return (
        'Find grouped tools by keywords and get their exact, current schemas. '
        'An empty query browses a group (or all groups). Results come in pages: pass `next_offset` as '
        f'`offset` to get the next page; `limit` defaults to {config.default_limit} and is at most '
        f'{config.max_results}. Each result gives `group`, `tool`, `description`, `parameters_json_schema`, '
        f'`return_schema`, `instructions` and `codeact_eligible`. Call a found tool with `{config.call_name}`.\n'
        f'Groups:\n{summary}'
    )


def call_description(config: ToolProxyConfig, summary: str) -> str:
    return (
        f'Call one grouped tool: give its `group`, its local `tool` name as returned by `{config.search_name}`, '
        "and `arguments`, an object matching that tool's `parameters_json_schema`.\n"
        f'Groups:\n{summary}'
    )


def guidance(config: ToolProxyConfig) -> str:
    """The generated proxy guidance placed in the agent instructions while at least one member exists."""
    s, c = config.search_name, config.call_name
    return (
        'Some tools are grouped by domain and are not listed directly. To use them:\n'
        f'1. Select the domain (group) that fits the task and call `{s}` with keywords to discover the exact tool schema.\n'
        f'2. Call `{c}` with the returned `group`, the local `tool` name, and an `arguments` object that matches '
        'the returned `parameters_json_schema`.\n'
        f'3. Reuse a schema you already know from this conversation instead of searching before every call.\n'
        f'4. When a search returns a `next_offset`, pass it as `offset` to see more results; when a tool '
        f'becomes unavailable, search again, since the available tools can change.\n'
        '5. If a call fails with an uncertain outcome, inspect the current state before retrying anything '
        'that changes data; never blindly repeat a mutation.'
    )
