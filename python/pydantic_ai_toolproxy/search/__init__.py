"""Search: the index both rankers use, and this package's ranking as a `ToolSearch` strategy (internal; the public
names are re-exported by the package root: `search_strategy`, `ToolProxySearchStrategy`).

- `index_cache`: `IndexSlot` (one core `SearchIndex` and its one sync) and `SearchIndexCache` (a slot per member set);
- `strategy`: `search_strategy()`, the core's ranking for Pydantic AI's `ToolSearch`, synced by the same `IndexSlot`.

When the ranking is keyword or hybrid, and the ranking call itself: `..hybrid.ranking`.
"""
