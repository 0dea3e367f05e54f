"""Rust core of pydantic-ai-toolproxy.

Validation of group names, descriptions, tool names and configuration; canonical names;
the incremental search index with deterministic ranking; byte-exact page planning.

Every function validates its inputs and reports problems as exceptions (``ValueError`` for
rejected values, ``TypeError`` for values of the wrong type); nothing here panics on user data.
Strings holding lone surrogates are accepted: each surrogate is read as U+FFFD.
"""

from collections.abc import Sequence
from typing import final

from typing_extensions import Buffer

__all__ = [
    'CANONICAL_SEPARATOR',
    'GROUP_NAME_PATTERN',
    'MAX_DESCRIPTION_CHARS',
    'MAX_FINGERPRINT_NODES',
    'MAX_QUERY_BYTES',
    'MAX_RESULTS_LIMIT',
    'MAX_SEARCH_BYTES',
    'MIN_SEARCH_BYTES',
    'SearchIndex',
    '__version__',
    'canonical_name',
    'embedding_fingerprints',
    'nonfinite_rows',
    'nothing_to_find',
    'plan_page',
    'schema_fingerprints',
    'split_canonical_name',
    'validate_config',
    'validate_group_description',
    'validate_group_name',
    'validate_tool_name',
]

__version__: str
"""The package version, from Cargo.toml (the one place it is written)."""

GROUP_NAME_PATTERN: str
"""``"^[A-Za-z][A-Za-z0-9_-]{0,31}$"``; a group name must also not contain ``"__"``."""

CANONICAL_SEPARATOR: str
"""``"__"``, the separator of canonical names ``group__tool``."""

MAX_DESCRIPTION_CHARS: int
"""``512``: the longest group description, in characters (``len()``)."""

MIN_SEARCH_BYTES: int
"""``1024``: the smallest accepted ``max_search_bytes``."""

MAX_SEARCH_BYTES: int
"""``32768``: the largest accepted ``max_search_bytes``."""

MAX_RESULTS_LIMIT: int
"""``100``: the largest accepted ``max_results``."""

MAX_QUERY_BYTES: int
"""``8192``: the longest query, in UTF-8 bytes, that the search control accepts from a model."""

def validate_group_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a valid group name.

    A valid name matches ``GROUP_NAME_PATTERN`` (an ASCII letter, then at most 31 ASCII letters,
    digits, ``-`` or ``_``) and does not contain ``"__"``. The message quotes the value like
    ``repr()``, e.g. ``invalid ToolProxy group name 'a__b': a group name must not contain '__'
    (the canonical-name separator)`` or ``invalid ToolProxy group name '9x': it must start with a
    letter and hold at most 32 letters, digits, '-' or '_'``.
    """

def validate_group_description(group: str, description: str) -> None:
    """Raise ``ValueError`` if ``description`` is blank, too long, or not valid Unicode text.

    Blank means empty or only whitespace (as ``str.isspace``); too long means more than
    ``MAX_DESCRIPTION_CHARS`` characters as counted by ``len()``; not valid Unicode text means it
    holds a lone surrogate (it could not be encoded into any request). The message names the group
    (and the description's length).
    """

def validate_tool_name(name: str) -> bool:
    """Return whether ``name`` matches ``^[A-Za-z0-9_-]{1,64}$``.

    This is the function-name rule model providers accept. Never raises; a non-``str`` is
    ``False``.
    """

def validate_config(search_name: str, call_name: str, max_results: int, max_search_bytes: int) -> None:
    """Raise ``ValueError`` naming the offending field and value unless the configuration is valid.

    Both names must satisfy ``validate_tool_name`` and differ from each other; ``max_results`` must
    be in ``1..=MAX_RESULTS_LIMIT`` and ``max_search_bytes`` in
    ``MIN_SEARCH_BYTES..=MAX_SEARCH_BYTES``. Integers of any size are accepted and reported exactly
    (e.g. ``invalid ToolProxy config: max_results must be between 1 and 100, got 0``). A
    non-integer number raises ``TypeError``.
    """

def canonical_name(group: str, tool: str) -> str:
    """Return the canonical name ``f"{group}__{tool}"``."""

def split_canonical_name(name: str) -> tuple[str, str] | None:
    """Split a canonical name at its first ``"__"``.

    ``"a__b__c"`` gives ``("a", "b__c")``. Returns ``None`` when there is no separator or either
    side is empty.
    """

MAX_FINGERPRINT_NODES: int
"""Most nodes ``schema_fingerprints`` reads of one value (100,000); a larger value fingerprints as 0."""

def embedding_fingerprints(
    records: Sequence[tuple[str, str, str, str, object]], tails: dict[str, str]
) -> tuple[list[str | None], list[bytes | None]]:
    """``(texts, fingerprints)`` of index records ``(key, group, tool, description, schema)``: each one's hybrid-search
    embedding text and its 16-byte fingerprint, in order; byte-identical to the Python recipe
    (``hybrid.embedding_text.embedding_text(group, tool, description, group_description)`` with ``tails[group] ==
    group_text(group, group_description)``, and ``text_hash``: BLAKE2b, ``digest_size=16``, of the UTF-8).

    Both are ``None`` for a record the caller must do with the Python recipe: not a tuple with ``str`` (exactly) at
    positions 1-3, a string holding a lone surrogate, or a group missing from ``tails``. Whitespace is folded as
    ``str.split()`` folds it (Python's ``str.isspace`` set). The texts are built and hashed without the GIL, about
    1 µs a tool. Raises ``TypeError`` when ``records`` is not iterable.
    """

def nonfinite_rows(rows: Sequence[Buffer]) -> list[int]:
    """The positions, ascending, of the bytes-like little-endian float32 ``rows`` holding a NaN or an infinity (all
    exponent bits set); a trailing partial value of a row is not read. ``TypeError`` for a row that is not bytes-like.
    About 20 ms for 100,000 rows of 384 dimensions, without the GIL.
    """

def schema_fingerprints(values: list[object]) -> tuple[bytes, int]:
    """Fingerprint JSON-like values by content: ``(fingerprints, unfingerprintable)``.

    ``fingerprints`` holds ``8 * len(values)`` bytes, one little-endian 64-bit fingerprint per value, in order;
    ``unfingerprintable`` counts those that are 0. A fingerprint hashes, in iteration order, every key and value of
    exactly-typed ``dict`` (string keys), ``list``, ``tuple``, ``str``, ``int``, ``float``, ``bool`` and ``None``
    down to the depth the index reads parameter schemas to (32 levels; deeper containers count as present only),
    each container with its kind and length, so ``1`` and ``True``, ``0.0`` and ``-0.0``, a list and a tuple, and
    two key orders all differ. Equal fingerprints mean equal indexed text, up to a 64-bit hash collision; a value
    edited in place changes its fingerprint while staying the same object. Strings are hashed by Python's own
    ``str`` hash (randomized per process: compare fingerprints only within one process).

    A value is not fingerprinted (0) when it holds an object of any other type (subclasses included) or a
    non-string key, or has more than ``MAX_FINGERPRINT_NODES`` nodes (a circular value is read to the depth limit
    only, so it fingerprints unless that exceeds the node budget). Runs no Python code; never raises for any value.
    About 0.1 µs a node while in cache (0.2-0.9 µs per BFCL-sized schema).
    """

def plan_page(entry_sizes: list[int], total: int, offset: int, budget: int) -> tuple[int, int | None, int]:
    """Plan one byte-budgeted search page and return ``(count, next_offset, page_size_bytes)``.

    The page is the compact JSON object ``{"tools":[E1,E2,...],"total":T,"next_offset":N}`` where
    ``N`` is an integer or ``null``. ``entry_sizes[i]`` is the UTF-8 size in bytes of the compact
    JSON of the entry at ranked position ``offset + i`` (at most ``limit`` sizes; fewer at the end of
    the results).

    Entries are taken greedily in order while the whole page, including the commas between
    entries, the digits of ``total`` and the digits of ``next_offset`` (or the 4 bytes of ``null``)
    that the count implies, stays ``<= budget``. ``next_offset`` is ``offset + count`` when that is
    below ``total``, else ``None``. ``page_size_bytes`` is the exact size of the planned page.

    With no entries the result is ``(0, None, size of the empty page)``, whatever ``offset`` is (an
    offset at or past ``total``, e.g. a stale ``next_offset``, plans the empty page).

    When the first entry does not fit alone the result is ``(0, next_offset, bytes that entry alone
    needs)``: a count of 0 with entries given, and a size above ``budget``. The caller reports that
    entry (no page can show it).

    Raises ``ValueError`` when a number is negative, or when entries are given and
    ``offset + len(entry_sizes)`` exceeds ``total``.
    """

def nothing_to_find(query: str) -> bool:
    """Whether ``query`` has nothing to look for (no alphanumeric character): ``SearchIndex.search`` browses it
    unless it is a record's exact name, and it is never ranked by meaning (no query vector is needed for it).
    The core's one rule; ``SearchIndex.rank`` reports whether a query did browse."""

@final
class SearchIndex:
    """Inverted index over tool records; holds no Python objects.

    Records are ``(key, group, tool, description, parameters_json_schema)`` tuples, where ``key`` is
    the canonical name. Ranking is deterministic: an exact name match first (the trimmed,
    lower-cased query equals a record's lower-cased tool name or its ``group__tool`` name), then a
    BM25F score over five fields (tool name, group name, description, parameter names, parameter
    texts) where English words also match through their stem (``restaurants`` ~ ``restaurant``),
    English function words and numbers weigh less and only order the records the other words
    find, and records matching more of the query rank higher, then ``(group, tool)`` in byte order.
    See ``src/index/bm25f.rs`` for the weights and ``docs/search-quality.md`` for the benchmark.

    Safe to share between threads: searches run concurrently without the GIL; updates are
    serialized.
    """

    def __init__(self) -> None:
        """Create an empty index."""

    def __len__(self) -> int:
        """Return the number of live records."""

    def upsert(self, records: list[tuple[str, str, str, str, object]]) -> None:
        """Add records, replacing any record with the same key.

        Each record is ``(key, group, tool, description, parameters_json_schema)``. Other records
        are not rebuilt, and a record identical to the indexed one is left as it is. The batch is
        converted in full before the index changes, so a malformed record (``TypeError`` /
        ``ValueError``) leaves the index untouched.

        ``parameters_json_schema`` may be any object. Only ``dict``, ``list``, ``tuple`` and ``str``
        are read, iteratively and with caps (depth 32, 2000 nodes per tool): the keys of every
        ``"properties"`` mapping (parameter names) and, inside the property schemas, the string values
        of ``"description"`` / ``"title"`` and the string items of ``"enum"`` lists become searchable
        parameter text. Anything else, including non-``str`` keys, is skipped.
        """

    def remove(self, keys: list[str]) -> None:
        """Remove records by key; unknown keys are ignored."""

    def set_group_description(self, group: str, description: str) -> None:
        """Set the description of ``group`` (``""`` removes it): a field shared by the group's members, indexed
        once for the group (no memory per member). A query's tokens found in it add the group's gain to every
        member the query finds; a query that finds no member but matches descriptions browses the matching
        groups' members, best group first. May be called before or after the group's records are added."""

    def keys(self) -> list[str]:
        """Return the live keys, in no particular order."""

    def explain(
        self, query: str, groups: list[str] | None, key: str
    ) -> tuple[bool, float, float, list[tuple[str, str, bool, float]]] | None:
        """Explain the score of the live record ``key`` for ``query``: ``(exact, score, coordination, matches)``,
        or ``None`` for an unknown key.

        ``matches`` holds ``(token, field, via_stem, gain)`` per query token and field it matched in, in query
        order: ``field`` is ``"tool name"``, ``"group name"``, ``"description"``, ``"parameter names"``,
        ``"parameter text"`` or ``"group description"``; ``via_stem`` is true when another word of the token's
        stem matched; ``gain`` is the token's BM25F gain in that field (its weight applied). ``score`` is
        the score the record is ranked by, bit for bit (computed by the ranking's own code for this record:
        ``sum(gains) * coordination`` up to the order the gains are added in); an ``exact`` name match ranks above
        every other match whatever its score. ``groups`` is the selection of the search being explained: a
        record outside it is explained as if selected, but, as in ``search``, when the query's other words find
        nothing selected, its function words and numbers score by themselves.
        """

    def search(self, query: str, groups: list[str] | None, offset: int, limit: int) -> tuple[int, list[str]]:
        """Return ``(total, keys)`` for the ranked results ``[offset : offset + limit]``.

        ``groups=None`` searches every group; otherwise only records whose group is listed (an
        empty list selects nothing). A query with nothing to look for (empty, whitespace or
        punctuation, and no exact name match) browses: every selected record, in ``(group, tool)``
        byte order. Otherwise only records matching at least one query token (or the exact name)
        count towards ``total``, ranked as described on the class; a word longer than 128 bytes is
        no token and matches nothing. Tokens are whole words (``me`` does not match ``comment``), split at camelCase and
        ``_``/``-`` (the whole identifier stays a token too), case-folded (``ß`` = ``ss``, fullwidth digits and
        letters = ASCII) and in NFC; Chinese, Japanese and Korean text matches by character bigrams. English function
        words and numbers (``12``, ``2025-01-01``) only order the records the other words find, unless those
        find nothing selected; a number that is a record's whole tool name (``2048``) finds it.

        The GIL is released while ranking. Raises ``ValueError`` for a negative ``offset`` or
        ``limit``.
        """

    def set_vectors(self, keys: list[str], vectors: Buffer, dimensions: int) -> None:
        """Attach tool vectors (embeddings) to the live records ``keys``, for ``search_hybrid``.

        ``vectors`` is a bytes-like object (``bytes``, or e.g. ``array('f', ...)``) of little-endian
        float32 values, row-major: ``len(keys) * dimensions * 4`` bytes, one row per key. Each row is
        L2-normalized and quantized to int8 codes with a float32 scale (``dimensions + 12`` bytes per
        record: 396 B at 384 dimensions, 1,548 B at 1,536); a zero vector is stored and has cosine 0.
        Unknown keys are ignored. A record keeps its vector across ``upsert``s of its key (set it
        again when the embedded text changes) and loses it with ``remove``.

        The first vector fixes the index's dimensionality. Raises ``ValueError`` (storing nothing) for
        a buffer of another length, ``dimensions`` below 1 or above 16,384, a non-finite value, or
        another dimensionality than the index's (unless ``clear_vectors()`` ran first); ``TypeError``
        when ``vectors`` is not bytes-like. The GIL is released while storing.
        """

    def set_vector_rows(self, keys: list[str], rows: Sequence[Buffer], dimensions: int) -> None:
        """``set_vectors`` with one bytes-like row of ``dimensions * 4`` bytes per key, not one joined buffer: the
        same checks (a count that is not ``len(keys)`` or a row of another length raises ``ValueError`` naming the
        row), the same codes, without the copy a ``b''.join`` of 100,000 rows costs (about 0.1 s at 384
        dimensions). The GIL is released while storing.
        """

    def drop_vectors(self, keys: list[str]) -> None:
        """Drop the vectors of ``keys``; unknown keys and keys without a vector are ignored."""

    def clear_vectors(self) -> None:
        """Drop every vector and the dimensionality (the next ``set_vectors`` may use another)."""

    def vector_count(self) -> int:
        """Return the number of live records with a vector."""

    def vector_dimensions(self) -> int | None:
        """Return the vectors' dimensionality, or ``None`` before the first ``set_vectors`` (or after
        ``clear_vectors``)."""

    def vector_keys_missing(self, keys: list[str]) -> list[str]:
        """Return the live records among ``keys`` that have no vector, in the order given (unknown keys
        are left out)."""

    def search_hybrid(
        self,
        query: str,
        query_vector: Buffer | None,
        groups: list[str] | None,
        offset: int,
        limit: int,
        weight: float,
    ) -> tuple[int, list[str]]:
        """Return ``(total, keys)`` for the results ``[offset : offset + limit]`` of the hybrid ranking.

        ``query_vector`` is the query's embedding, little-endian float32 bytes of the index's
        dimensionality; ``weight`` (0 to 1) is the semantic share. Over the selected live records
        (``groups`` as in ``search``), with ``c1`` the best cosine between the query vector and a
        record's vector and ``cF`` the 50th best (the smallest with fewer vectors):

        - ``sem = clip((cosine - cF) / (c1 - cF), 0, 1)`` (0 without a vector, or when ``c1 == cF``);
        - ``kw = e * keyword score / best keyword score`` (the score of ``search``; 0 for a non-match),
          where the keyword evidence ``e`` (0 to 1) is the summed idf of the query words (not function
          words or numbers) that the best keyword match holds, over the idf of a word held by 10% of
          the records, capped at 1: 0 when only function words or numbers match, partial when only
          very common words do;
        - ``fused = (1 - weight) * kw + weight * sem``.

        The ranked records are the keyword matches plus the records closer to the query than the
        50th nearest (``sem > 0``): ``total`` counts both, so it is at most 49 more than ``search``'s.
        Order: exact name matches first, then ``fused`` descending, then the keyword score, then
        ``(group, tool)`` in byte order; deterministic, and every page of one query is a slice of
        one ranking. ``query_vector=None``, ``weight=0``, an index without vectors, or a query with
        nothing to look for (browsing) returns exactly what ``search`` returns.

        The GIL is released while ranking. Raises ``ValueError`` for a negative ``offset`` or
        ``limit``, a ``weight`` outside ``[0, 1]`` or NaN, a query vector of another length than
        the index's dimensionality, or one holding a non-finite value; ``TypeError`` when
        ``query_vector`` is not bytes-like.
        """

    def rank(
        self,
        query: str,
        query_vector: Buffer | None,
        groups: list[str] | None,
        offset: int,
        limit: int,
        weight: float,
    ) -> tuple[int, list[str], int, bool]:
        """Return ``(total, keys, exact, browsed)``: what ``search_hybrid`` returns (``search`` exactly when
        ``query_vector`` is ``None``, whatever ``weight``), how many of ``keys``, from the first, are exact name
        matches of ``query`` (``explain``'s ``exact``: they rank first), and whether the query browsed (nothing to
        look for and no exact name: ``keys`` are the selected records in ``(group, tool)`` order), in one call.

        Raises what ``search_hybrid`` raises.
        """

    def explain_hybrid(
        self,
        query: str,
        query_vector: Buffer | None,
        groups: list[str] | None,
        key: str,
        weight: float,
    ) -> tuple[bool, float, float, float | None, float, float, float] | None:
        """Explain the hybrid rank of the live record ``key``: ``(exact, keyword_score, keyword_share,
        cosine, semantic_share, weight, fused)``, or ``None`` for an unknown key.

        ``keyword_score`` is the record's keyword score (``explain``'s ``score``, 0 for a non-match),
        ``keyword_share = (1 - weight) * kw`` (``kw`` with the keyword evidence, see there), ``cosine`` its cosine with the query vector (``None``
        without either vector), ``semantic_share = weight * sem``, and ``fused`` their sum, the value
        ``search_hybrid`` ranks by after exact names (see there). Above 3,072 selected vectors the
        50 nearest come from a prefilter's pool: a record the pool left out has ``semantic_share`` 0
        here as in the ranking, whatever its ``cosine``. A record outside ``groups`` is explained as
        if selected, against the selection's best keyword score and cosines. Raises as
        ``search_hybrid`` does.
        """
