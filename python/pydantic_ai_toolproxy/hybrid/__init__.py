"""Hybrid search: the tools' and the queries' vectors beside the keyword index, one concept per module.

- `ranking`: when hybrid ranking applies, and the ranking itself (the one entry point of `controls.search` and `search.strategy`);
- `vectors`: `ToolVectors`, the tool vectors of one surface following its indexes;
- `dimensions`: `DimensionPolicy`, the size the held vectors have and store vectors of another size made stale;
- `fill`: the background fill of pending tool vectors, claims between processes, how long a search waits;
- `batches`: embedding tool texts in batches within the model's limits (`EmbedCounts`);
- `queries`: the query vector and its cache;
- `store_io`: the embedding store: opening it, the vectors the core can take, bounded calls;
- `loop`: the process-wide embedding loop every embedder call runs on;
- `warnings`: log-once warnings and why a search fell back to keywords;
- `protocol`: `VectorHolder`, what `fill`, `batches` and `queries` use of `ToolVectors`;
- `embedder`: `ToolProxyConfig.embedder` resolved to an `Embedder` (`local:PATH` too), its identity, f32 bytes;
- `embedding_text`: the text a tool is embedded as, and its 16-byte fingerprint (the store's key beside the model).

Every embedder call runs on one event loop per process (`loop.embedding_loop`), in a copy of the asking search's
context, so an `Embedder.override(model=...)` active there is the model that embeds; faults are logged on the
`pydantic_ai_toolproxy` logger, once per kind until that kind succeeds again, and never reach the model. What it
does for users: docs/hybrid-search.md.
"""
