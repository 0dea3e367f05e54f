"""Compare two ranking dumps of `bench/dump_rankings.py` (keyword format) by order: every query header and every
rank's key and exact flag must be the same; lines whose score alone changed are counted, with the largest relative
change. Exit status 1 when an order moved.

    .venv/bin/python -m bench.dump_order bench/dumps/after.txt /tmp/now.txt
"""

from __future__ import annotations

import argparse
from pathlib import Path


def parse(path: Path) -> list[tuple[str, float | None]]:
    """Per line: what the order is made of (the header, or rank, key and exact flag), and the score (None for a
    header)."""
    out: list[tuple[str, float | None]] = []
    for line in path.read_text(encoding='utf-8').splitlines():
        if line.startswith('#'):
            out.append((line, None))
            continue
        rank, key, score, *flags = line.split(' ')
        out.append((' '.join([rank, key, *flags]), float(score)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('old', type=Path)
    parser.add_argument('new', type=Path)
    args = parser.parse_args()
    old, new = parse(args.old), parse(args.new)
    moved = len(old) != len(new) or any(a[0] != b[0] for a, b in zip(old, new, strict=False))
    changed = [(a[1], b[1]) for a, b in zip(old, new, strict=False) if a[0] == b[0] and a[1] != b[1]]
    worst = max((abs(b - a) / max(abs(a), 1e-30) for a, b in changed if a is not None and b is not None), default=0.0)
    queries = sum(1 for _, score in old if score is None)
    print(
        f'{queries:,} queries, {len(old) - queries:,} ranked lines: order {"MOVED" if moved else "unchanged"}; '
        f'{len(changed):,} lines with another score (largest relative change {worst:.3g})'
    )
    raise SystemExit(1 if moved else 0)


if __name__ == '__main__':
    main()
