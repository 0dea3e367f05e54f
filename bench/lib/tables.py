"""Markdown tables as the benchmarks print them: the first column left-aligned, the others right-aligned."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [
        '| ' + ' | '.join(headers) + ' |',
        '|' + '|'.join(' --- ' if i == 0 else ' ---: ' for i in range(len(headers))) + '|',
    ]
    lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
    return '\n'.join(lines)
