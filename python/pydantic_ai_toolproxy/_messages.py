"""Bounds on the text the proxy sends a model: every retry and failure it writes stays a few KB, whatever the
model sent.

A model's input is echoed only as a cut `repr` (`shown`); lists that grow with the host's configuration (groups,
close names) are cut with a count of the rest (`listing`); and every message is cut to `MAX_MESSAGE_CHARS` at the
end (`bounded`), so no code path can send a model its own 100 KB argument back. A target tool's own `ModelRetry`
text is the target's, as it would be installed directly, and is not rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai.exceptions import ModelRetry, ToolFailed

__all__ = (
    'ENVELOPE_HINT',
    'MAX_MESSAGE_CHARS',
    'MAX_SHOWN_CHARS',
    'FailureReason',
    'ProxyFailed',
    'bounded',
    'cut',
    'encodes',
    'failed',
    'listing',
    'retry',
    'shown',
    'source_label',
)

MAX_MESSAGE_CHARS = 2_000
"""Longest retry or failure text the proxy writes, in characters (at most 8,000 UTF-8 bytes; in practice ASCII)."""
MAX_SHOWN_CHARS = 80
"""Longest repr of a model-supplied value echoed in a message; a 10 KB name is cut, not sent back whole."""
MAX_LISTING_CHARS = 600
"""Longest list of names (groups, close names) in one message; the rest is counted, not named."""

ENVELOPE_HINT = 'Expected envelope: {"group": "<group>", "tool": "<local tool name>", "arguments": {...}}.'


def encodes(text: str) -> bool:
    """Whether `text` is valid Unicode, i.e. encodes as UTF-8 (no lone surrogates, as non-UTF-8 argv bytes arrive)."""
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return False
    return True


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (a cut text ends with `...`)."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + '...'


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """`repr(value)` cut to `limit` characters; a value whose repr fails or is too deep is shown by its type."""
    if isinstance(value, str) and len(value) > 4 * limit:
        value = value[: 4 * limit]  # repr of a huge string would copy all of it first
    try:
        text = repr(value)
    except Exception:  # a repr that raises, or a RecursionError on a deeply nested value
        text = f'<{type(value).__name__}>'
    return cut(text, limit)


def listing(names: Sequence[str], limit: int = MAX_LISTING_CHARS) -> str:
    """`a, b, c` for as many names as fit in `limit` characters, then `and N more`; `(none)` when empty."""
    if not names:
        return '(none)'
    parts: list[str] = []
    used = 0
    for name in names:
        if used + len(name) + 2 > limit and parts:
            break
        parts.append(cut(name, limit))
        used += len(parts[-1]) + 2
    rest = len(names) - len(parts)
    return ', '.join(parts) + (f' and {rest} more' if rest else '')


def bounded(text: str) -> str:
    """`text` cut to `MAX_MESSAGE_CHARS`: the last guard on every message the proxy writes for a model."""
    return cut(text, MAX_MESSAGE_CHARS)


def retry(text: str) -> ModelRetry:
    """A `ModelRetry` whose message is `bounded`."""
    return ModelRetry(bounded(text))


FailureKind = Literal['oversized-entry', 'unserializable-entry', 'core-error']
"""What made a control fail (`FailureReason.kind`)."""


@dataclass(frozen=True)
class FailureReason:
    """Why a control failed, as data beside the model-facing message: code reads this, never the message text.

    Attributes:
        kind: `oversized-entry` (an entry cannot fit alone in a search page), `unserializable-entry` (an entry
            cannot be sent as JSON), `core-error` (the Rust core raised; the index was rebuilt).
        group: The group of the entry concerned, if one is.
        tool: The local name of the tool concerned, if one is.
        entry_bytes: For `oversized-entry`: the entry's size in UTF-8 bytes, as serialized for the model.
        instruction_bytes: For `oversized-entry`: the bytes of the group's source instructions in the entry, when
            the entry would fit without them (then they are the cause), else None.
        budget: For `oversized-entry`: `max_search_bytes`, in bytes.
    """

    kind: FailureKind
    group: str | None = None
    tool: str | None = None
    entry_bytes: int | None = None
    instruction_bytes: int | None = None
    budget: int | None = None


class ProxyFailed(ToolFailed):
    """A `ToolFailed` raised by a control, carrying its `FailureReason` (`reason`) beside `message`.

    The model gets `message` only (Pydantic AI builds the failed tool return from it); hosts and the CLI read
    `reason`, e.g. from a capability's `wrap_tool_execute` (`cli._probe`).
    """

    reason: FailureReason | None

    def __init__(self, message: str, reason: FailureReason | None = None) -> None:
        super().__init__(message)
        self.reason = reason


def failed(text: str, reason: FailureReason | None = None) -> ProxyFailed:
    """A `ToolFailed` (`ProxyFailed`, with `reason`) whose message is `bounded`."""
    return ProxyFailed(bounded(text), reason)


def source_label(source: object) -> str:
    """How errors name a capability or plugin contribution: `repr` of its `id` when it has a non-empty one, else
    its class name (used by `ToolProxyPlan` and the plan application in `harness/`)."""
    source_id = getattr(source, 'id', None)
    return repr(source_id) if source_id else type(source).__name__
