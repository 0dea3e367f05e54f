"""Interleaved tenants alone: the table `bench.perf` prints (3,000 tools a tenant, 4 tenants, 24 searches).

    .venv/bin/python -m bench.tenants

One shared `ToolProxyCapability` whose source lists per-deps member sets (one catalogue per tenant), searched by
concurrent runs whose steps interleave, against the same runs one after another (`bench/lib/tenant_runs.py`).
"""

from __future__ import annotations

import asyncio

from bench.lib.replicas import corpus, nl_questions
from bench.lib.tables import table
from bench.lib.tenant_runs import HEADERS, interleaved_tenants, row, tenant_catalogues
from examples.bfcl_tools import load_bfcl_functions


async def main() -> None:
    per_tenant, tenants, searches = 3_000, 4, 24
    fns = corpus(per_tenant * tenants, load_bfcl_functions())
    times = await interleaved_tenants(tenant_catalogues(fns, tenants, per_tenant), nl_questions(searches), searches)
    print(table(HEADERS, [row(per_tenant, tenants, times)]))


if __name__ == '__main__':
    asyncio.run(main())
