"""A fleet of workers sharing one store: texts embedded by 4 workers started together (memory, SQLite, PostgreSQL),
restart from PostgreSQL, writing 100,000 vectors (bench/lib/fleet.py says what each table measures).

Run from the repository root: `python -m bench.fleet_store` (`--quick` for 2 repeats; `--workers`, `--tools`,
`--delay`, `--vectors`). It starts its own PostgreSQL server (PostgreSQL 15 binaries on PATH; as root through
`runuser -u postgres`). Also printed by `bash scripts/bench-perf` (`--only fleet` for this table alone).
"""

from __future__ import annotations

import sys

from bench.lib import fleet


def main() -> None:
    fleet.report(sys.argv[1:])


if __name__ == '__main__':
    main()
