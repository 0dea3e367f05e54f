"""The benchmarks: commands at the top, the code they share in `bench.lib`, one-off studies in `bench.experiments`.

Run a command as a module from the repository root (nothing here edits the import path: the root is on it because
`-m` puts the working directory there), e.g.

    bash scripts/bench-perf                               # .venv-bench/bin/python -m bench.perf
    bash scripts/bench-quality                            # .venv-bench/bin/python -m bench.quality
    .venv/bin/python -m bench.dump_rankings --out /tmp/now.txt

Commands (each module's docstring says what it prints and how long it takes):

- `perf`: speed, memory and context against the reference implementations (`scripts/bench-perf`);
- `quality`: search quality against the reference rankers on BFCL and the agent-query set (`scripts/bench-quality`);
- `hybrid_quality`: the hybrid rows of `quality` alone (all-MiniLM-L6-v2 as the embedder);
- `keyword_evidence`: hybrid quality with deterministic vectors (no model; issue 28's table);
- `dump_rankings`: the exact top-10 keyword rankings, compared byte for byte with `bench/dumps/after.txt`;
- `embedding_cache`: storing and loading 100,000 cached tool vectors (issue 22);
- `mcp_servers`: many MCP servers, time to the first model request (issue 29; also `perf --only mcp`);
- `tenants`: interleaved tenants (also a table of `perf`);
- `cache_stability`: prompt-cache stability against Pydantic AI's `ToolSearch` (checked by tests/test_prompt_cache.py);
- `profile_step`: where a ToolProxy step's time goes (cProfile);
- `export_records`, `export_vectors`: the corpora's records and real vectors, for the Rust benches of `src/index/`.

`bench.lib` holds the corpora (`corpus`, `agent_corpus`, `sets`, `replicas`), the rankers and metrics, the agent and
client harnesses (`agent_steps`, `real_client`, `loopback_llm`, `recording_llm`), and the rows the commands print;
it imports no command. `bench.experiments` (see its README.md) holds studies that answered one question once.
Data: `bench/agent_queries/` (the agent-query set) and `bench/dumps/` (the stored ranking dumps).
"""
