"""Why a tool ranked where it did: `ToolProxyCapability.explain` and the values it returns.

A host that finds a tool ranked lower than it should be can see which query words matched where (the tool name,
its description, its parameters, the group name or the group's description) and each one's share of the score,
then fix the description that misses the words agents use. With an embedder (hybrid search), each explanation
also shows the keyword share, the cosine, the normalized semantic share, the weight and the fused score.
`toolproxy search --explain` prints the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .grouping.names import canonical_name

if TYPE_CHECKING:
    from ._runtime import ProxyRuntime

__all__ = ('SearchExplanation', 'TermMatch', 'explain_tools')


@dataclass(frozen=True)
class TermMatch:
    """One query word's part of a tool's score, in one field.

    Attributes:
        token: The query word, lower-cased as the tokenizer produced it.
        field: Where it matched: `tool name`, `group name`, `description`, `parameter names`, `parameter text` or
            `group description`.
        via_stem: True when another word of its stem matched (`lists` for `list`), not the word itself.
        gain: Its BM25F gain in that field (function words and numbers weigh 0.3), before the coordination factor.
        share: Its share of the tool's score, 0..1 (the shares of a tool's matches add up to 1).
    """

    token: str
    field: str
    via_stem: bool
    gain: float
    share: float


@dataclass(frozen=True)
class SearchExplanation:
    """Why one tool has the score it was ranked by, for one query.

    Attributes:
        group: The tool's group.
        tool: The tool's local name.
        exact: The query is the tool's name: it ranks above every other match, whatever its score.
        score: The score the ranking sorts by (higher first), bit for bit: the core explains with the ranking's own
            code. `sum(match.gain) * coordination` up to rounding (the ranking adds the gains in its own order).
        coordination: `1 + 1.5 * matched / query words`: the more of the query's words a tool matches (in its own
            fields or its group's description), the higher.
        matches: Every word's gain per field, in query order; empty when nothing matched.
        keyword_share: Hybrid search only (None otherwise): the keyword part of `fused`, `(1 - weight) * kw`, where
            `kw` = `score` / the best keyword score among the searched tools (0 for a tool the keywords miss), times
            the query's keyword evidence (0 to 1; 0 when only function words or numbers matched, see
            docs/hybrid-search.md).
        cosine: Hybrid search only: the cosine between the query's vector and the tool's (quantized) vector, or
            None when the tool has no vector yet.
        semantic: Hybrid search only: the normalized semantic score `clip((cosine - c50) / (c1 - c50), 0, 1)`,
            where c1 and c50 are the query's best and 50th best cosines over the searched tools (None when
            `weight` is 0).
        semantic_share: Hybrid search only: the semantic part of `fused`, `weight * semantic`.
        weight: Hybrid search only: `ToolProxyConfig.semantic_weight`.
        fused: Hybrid search only: `keyword_share + semantic_share`, what the hybrid ranking sorts by after exact
            names.
    """

    group: str
    tool: str
    exact: bool
    score: float
    coordination: float
    matches: tuple[TermMatch, ...]
    keyword_share: float | None = None
    cosine: float | None = None
    semantic: float | None = None
    semantic_share: float | None = None
    weight: float | None = None
    fused: float | None = None


def explain_tools(
    runtime: ProxyRuntime, query: str, tools: Sequence[tuple[str, str]], group: str | None
) -> list[SearchExplanation]:
    """`ToolProxyCapability.explain`: one `SearchExplanation` per `(group, tool)` pair of `tools`, from the search
    index as the last search left it (`SearchIndex.explain`, and `explain_hybrid` when a recent search embedded this
    `query`; the embedder is never called). A pair the index does not hold explains as a score of 0."""
    groups = None if group is None else [group]
    cache = runtime.search_index
    vectors = runtime.vectors
    query_vector = None if vectors is None else vectors.cached_query_vector(query)
    out: list[SearchExplanation] = []
    with cache.lock:
        for group_name, tool in tools:
            key = canonical_name(group_name, tool)
            raw = cache.index.explain(query, groups, key)
            if raw is None:
                out.append(SearchExplanation(group_name, tool, False, 0.0, 1.0, ()))
                continue
            exact, score, coordination, matches = raw
            total = score / coordination if coordination else 0.0
            why = SearchExplanation(
                group_name,
                tool,
                exact,
                score,
                coordination,
                tuple(
                    TermMatch(token, field, via_stem, gain, gain / total if total else 0.0)
                    for token, field, via_stem, gain in matches
                ),
            )
            if vectors is not None and query_vector is not None:
                try:
                    hybrid = cache.index.explain_hybrid(query, query_vector, groups, key, vectors.weight)
                except ValueError:  # the query vector's size differs from the tools' (searched by keywords)
                    hybrid = None
                if hybrid is not None:
                    _, _, keyword_share, cosine, semantic_share, weight, fused = hybrid
                    why = replace(
                        why,
                        keyword_share=keyword_share,
                        cosine=cosine,
                        semantic=semantic_share / weight if weight > 0 else None,
                        semantic_share=semantic_share,
                        weight=weight,
                        fused=fused,
                    )
            out.append(why)
    return out
